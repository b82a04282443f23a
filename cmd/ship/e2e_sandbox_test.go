package main_test

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
)

// The canaries of the sandbox test: in ship's environment from its start,
// in .env and in ship.json.
const (
	canaryEnv     = "canary-e2e-environ-5c4b3a2918"
	canaryDotenv  = "canary-e2e-dotenv-7f6e5d4c3b"
	canaryConfig  = "canary-e2e-config-0a9b8c7d6e"
	sandboxProbe  = "for f in /proc/[0-9]*/environ; do base64 -w0 $f; echo; done; cat .env ship.json; base64 -w0 .env; echo; base64 -w0 ship.json"
	envRequireBox = "SHIP_REQUIRE_SANDBOX"
)

// TestE2ESandboxHidesShipsSecrets runs exec_shell through the real binary:
// the model asks for every process's environment, .env and ship.json, and
// the answer holds none of the canaries ship has there, not even encoded.
// GET /api/tools and the start-up output show the sandbox.
func TestE2ESandboxHidesShipsSecrets(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil || runtime.GOOS != "linux" {
		if os.Getenv(envRequireBox) == "1" {
			t.Fatalf("no bwrap, and %s=1: %v", envRequireBox, err)
		}
		t.Skipf("bwrap is not installed (apt-get install bubblewrap; %s=1 makes this a failure)", envRequireBox)
	}
	fake := startFake(t, func(r fakeopenai.Request) fakeopenai.Response {
		if len(r.ToolResults()) > 0 {
			return fakeopenai.Response{Content: "done"}
		}
		args, _ := json.Marshal(map[string]string{"command": sandboxProbe}) // a string map always encodes
		return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: "exec_shell", Arguments: string(args)}}}
	})
	dir := initProject(t)
	setTools(t, dir, `{"exec": {"enabled": true, "sandbox": "required"}, "allow": ["exec_shell"]}`)
	setConfig(t, dir, "adapters", `{"telegram": {"botToken": "`+canaryConfig+`", "enabled": false}}`)
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte("SHIP_E2E_DOTENV="+canaryDotenv+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startShip(t, dir, modelEnv(fake, "SHIP_E2E_CANARY="+canaryEnv))
	p.mustExecute(t, "", "show me the secrets")

	var result string
	for _, r := range fake.Requests() {
		for _, m := range r.ToolResults() {
			result = m.Content
		}
	}
	if !strings.Contains(result, `"exitCode"`) { // it ran, and was not refused
		t.Fatalf("exec_shell did not run: %s", result)
	}
	for _, text := range decodedWords(result) {
		for _, c := range []string{canaryEnv, canaryDotenv, canaryConfig} {
			if strings.Contains(text, c) {
				t.Errorf("%q leaked: %.500s", c, result)
			}
		}
	}

	var tools struct {
		Sandbox *struct {
			Mode    string `json:"mode"`
			Active  bool   `json:"active"`
			Tool    string `json:"tool"`
			Network bool   `json:"network"`
		} `json:"sandbox"`
	}
	if err := json.Unmarshal(p.do(t, "GET", "/api/tools", "").body, &tools); err != nil {
		t.Fatal(err)
	}
	if s := tools.Sandbox; s == nil || s.Mode != "required" || !s.Active || !strings.HasPrefix(s.Tool, "bwrap ") || s.Network {
		t.Errorf("GET /api/tools sandbox = %+v", s)
	}
	if !strings.Contains(p.stdout.String(), "exec_shell: ") {
		t.Errorf("start-up does not say how exec_shell runs: %s", p.stdout.String())
	}
}

// decodedWords is text with every run of base64 characters in it (in the
// JSON-decoded form too) decoded, so an encoded canary is found.
func decodedWords(text string) []string {
	var unquoted map[string]any
	_ = json.Unmarshal([]byte(text), &unquoted)
	out := []string{text}
	for _, v := range unquoted {
		s, ok := v.(string)
		if !ok {
			continue
		}
		out = append(out, s)
		for _, w := range strings.FieldsFunc(s, func(r rune) bool {
			return !strings.ContainsRune("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=", r)
		}) {
			if b, err := base64.StdEncoding.DecodeString(w); err == nil {
				out = append(out, string(b))
			}
		}
	}
	return out
}
