package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

const (
	goodHex = "9f2c4e1a7b3d5f608e1c2a4b6d8f0e1a3c5b7d9f1e2a4c6b8d0f1e3a5c7b9d0e" // openssl rand -hex 32
	goodB64 = "pQ7xK2mN9vR4tY6wZ1aB3cD5eF8gH0jL2nP4qS6uV8x"                      // 32 bytes, base64url
)

func TestNamedTokensLoadFromTheEnvironmentAndAreSecrets(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, FileName, `{"server": {"tokens": [
	  {"name": "ci", "token": "${CI_TOKEN}", "identity": "api:ci-bot"},
	  {"name": "web.front-end_2", "token": "${WEB_TOKEN}", "identity": "api:web"}
	]}}`)
	cfg, err := Load(dir, envOf(map[string]string{"CI_TOKEN": goodHex, "WEB_TOKEN": goodB64, "SHIP_API_TOKEN": "op-" + goodHex}))
	if err != nil {
		t.Fatal(err)
	}
	want := []NamedToken{{"ci", goodHex, "api:ci-bot"}, {"web.front-end_2", goodB64, "api:web"}}
	if !slices.Equal(cfg.Server.Tokens, want) {
		t.Errorf("tokens = %+v", cfg.Server.Tokens)
	}
	secrets := cfg.Secrets()
	for _, s := range []string{goodHex, goodB64, "op-" + goodHex} {
		if !slices.Contains(secrets, s) {
			t.Errorf("Secrets() lacks a token: tools and logs would not hide it")
		}
	}
}

func TestNamedTokensAreValidated(t *testing.T) {
	for _, tc := range []struct{ name, tokens, want string }{
		{"bad name", `[{"name": "c i", "token": "x-` + goodHex + `", "identity": "api:ci"}]`, "name"},
		{"long name", `[{"name": "` + strings.Repeat("n", 33) + `", "token": "x", "identity": "api:ci"}]`, "1 to 32"},
		{"no name", `[{"token": "x", "identity": "api:ci"}]`, "name"},
		{"twice", `[{"name": "a", "token": "1` + goodHex + `", "identity": "api:a"}, {"name": "a", "token": "2` + goodHex + `", "identity": "api:b"}]`, "named twice"},
		{"no token", `[{"name": "ci", "token": "${UNSET}", "identity": "api:ci"}]`, "has no token"},
		{"spaces", `[{"name": "ci", "token": " x", "identity": "api:ci"}]`, "whitespace"},
		{"same token", `[{"name": "a", "token": "` + goodHex + `", "identity": "api:a"}, {"name": "b", "token": "` + goodHex + `", "identity": "api:b"}]`, `same token as server.tokens "a"`},
		{"server token", `[{"name": "a", "token": "` + goodB64 + `", "identity": "api:a"}]`, "same token as SHIP_API_TOKEN"},
		{"not api", `[{"name": "a", "token": "x", "identity": "telegram:1"}]`, "api:<name>"},
		{"bare api", `[{"name": "a", "token": "x", "identity": "api:"}]`, "api:<name>"},
		{"glob", `[{"name": "a", "token": "x", "identity": "api:*"}]`, "* or ?"},
		{"space", `[{"name": "a", "token": "x", "identity": "api:ci bot"}]`, "whitespace"},
		{"long", `[{"name": "a", "token": "x", "identity": "api:` + strings.Repeat("x", 253) + `"}]`, "at most 256"},
		{"anonymous", `[{"name": "a", "token": "x", "identity": "api:anonymous"}]`, "ship's own"},
		{"token", `[{"name": "a", "token": "x", "identity": "api:token"}]`, "ship's own"},
		{"console", `[{"name": "a", "token": "x", "identity": "api:console"}]`, "ship's own"},
	} {
		dir := t.TempDir()
		write(t, dir, FileName, `{"server": {"tokens": `+tc.tokens+`}}`)
		_, err := Load(dir, envOf(map[string]string{"SHIP_API_TOKEN": goodB64}))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), goodHex) || strings.Contains(err.Error(), goodB64) {
			t.Errorf("%s: the error shows a token: %v", tc.name, err)
		}
	}
}

func TestAWeakTokenIsRefusedBeyondLoopbackOnly(t *testing.T) {
	for _, tc := range []struct {
		name   string
		server ServerConfig
		want   string // "" for no error
		weak   []string
	}{
		{"short on loopback", ServerConfig{Host: "127.0.0.1", Token: "s3cret"}, "", []string{"SHIP_API_TOKEN (server.token)"}},
		{"short on localhost", ServerConfig{Host: "localhost", Token: "s3cret"}, "", []string{"SHIP_API_TOKEN (server.token)"}},
		{"short on ::1", ServerConfig{Host: "::1", Token: "s3cret"}, "", []string{"SHIP_API_TOKEN (server.token)"}},
		{"short on 0.0.0.0", ServerConfig{Host: "0.0.0.0", Token: "s3cret"}, "SHIP_API_TOKEN (server.token) is too easy to guess to listen on 0.0.0.0", nil},
		{"none on 0.0.0.0", ServerConfig{Host: "0.0.0.0"}, "without an API token", nil},
		{"hex on 0.0.0.0", ServerConfig{Host: "0.0.0.0", Token: goodHex}, "", nil},
		{"base64url on ::", ServerConfig{Host: "::", Token: goodB64}, "", nil},
		{"weak named token", ServerConfig{Host: "0.0.0.0", Token: goodHex,
			Tokens: []NamedToken{{Name: "ci", Token: "ci-password-2024", Identity: "api:ci"}}}, `server.tokens "ci" is too easy to guess`, nil},
		{"named tokens only", ServerConfig{Host: "10.0.0.5",
			Tokens: []NamedToken{{Name: "ci", Token: goodB64, Identity: "api:ci"}}}, "", nil},
	} {
		weak, err := tc.server.CheckExposure()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "openssl rand -hex 32")):
			t.Errorf("%s: %v, want an error saying %q and how to make a good token", tc.name, err, tc.want)
		case err != nil && (strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "ci-password")):
			t.Errorf("%s: the error shows the token: %v", tc.name, err)
		}
		if !slices.Equal(weak, tc.weak) {
			t.Errorf("%s: weak = %q, want %q", tc.name, weak, tc.weak)
		}
	}
}

func TestStrongToken(t *testing.T) {
	for token, want := range map[string]bool{
		goodHex:                  true,
		strings.ToUpper(goodHex): true,
		goodB64:                  true,
		"pQ7xK2mN9vR4tY6wZ1aB3cD5eF8gH0jL2nP4qS6uV8x=": true, // openssl rand -base64 32
		goodHex[:48]:                    false, // 24 bytes of hex
		strings.Repeat("a", 100):        false,
		strings.Repeat("abcd", 30):      false,
		strings.Repeat("1234567890", 7): false, // 70 digits: 232 bits
		"correct-horse-battery-staple":  false,
		"s3cret":                        false,
		"":                              false,
	} {
		if got := strongToken(token); got != want {
			t.Errorf("strongToken(%q) = %v, want %v", token, got, want)
		}
	}
}

func TestRolesNamingAPIIdentitiesNoTokenHasAreReported(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, FileName, `{
	  "server": {"tokens": [{"name": "ci", "token": "${CI}", "identity": "api:ci-bot"}]},
	  "tools": {"roles": {
	    "old":   {"members": ["api:alice", "api:boss", "telegram:1"], "allow": ["exec_shell"]},
	    "fine":  {"members": ["api:ci-bot", "api:token", "api:console", "api:*", "api:anonymous"]},
	    "again": {"members": ["api:alice"]}
	  }}
	}`)
	cfg, err := Load(dir, envOf(map[string]string{"CI": goodHex}))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.UnprovenAPIMembers(); !slices.Equal(got, []string{"api:alice", "api:boss"}) {
		t.Errorf("UnprovenAPIMembers() = %q, want api:alice and api:boss", got)
	}
}
