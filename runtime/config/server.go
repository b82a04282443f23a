package config

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/shipmyagent/ship/internal/netguard"
	"github.com/shipmyagent/ship/runtime/chat"
)

// NamedToken is an API token of its own (server.tokens): whoever presents
// it acts as Identity in the tool policy, whatever userId a request body
// names. Token is a secret like SHIP_API_TOKEN; write it as "${VAR}".
type NamedToken struct {
	// Name says which token it is in logs and errors: 1 to 32 of
	// A-Z a-z 0-9 . _ -.
	Name  string `json:"name"`
	Token string `json:"token"`
	// Identity is "api:<something>", as tools.roles members name it.
	Identity string `json:"identity"`
}

// Limits of a named token's fields.
const (
	maxTokenNameLen = 32
	maxIdentityLen  = 256
)

// minTokenBits is how hard a token must be to guess before ship serves it
// beyond loopback: what 32 random bytes give.
const minTokenBits = 256

// minTokenDistinct keeps a long run of few characters ("aaaa…", "abab…")
// from passing on its length alone; 64 random hex digits use about 16.
const minTokenDistinct = 10

// tokenAdvice is how to make a token that passes.
const tokenAdvice = "use at least 32 random bytes, e.g. `openssl rand -hex 32` (64 hex characters)"

// AuthOn reports whether the API asks for a bearer token.
func (s ServerConfig) AuthOn() bool { return s.Token != "" || len(s.Tokens) > 0 }

// Loopback reports whether Host is reachable from this machine only.
func (s ServerConfig) Loopback() bool { return netguard.LoopbackHost(s.Host) }

// CheckExposure is the start-up check of where the API listens (Host may
// come from a flag, after Load): beyond loopback it needs a token, and
// every token strong enough to face the network. On loopback it returns
// the settings whose token is weak, for a warning.
func (s ServerConfig) CheckExposure() (weak []string, err error) {
	for _, t := range s.tokens() {
		if !strongToken(t.value) {
			weak = append(weak, t.setting)
		}
	}
	if s.Loopback() {
		return weak, nil
	}
	if !s.AuthOn() {
		return nil, fmt.Errorf("%w: refusing to listen on %s without an API token: set SHIP_API_TOKEN (%s), or use --host 127.0.0.1",
			ErrInvalid, s.Host, tokenAdvice)
	}
	if len(weak) > 0 {
		return nil, fmt.Errorf("%w: %s is too easy to guess to listen on %s: %s, or use --host 127.0.0.1",
			ErrInvalid, weak[0], s.Host, tokenAdvice)
	}
	return nil, nil
}

// namedSetting is one token and the setting it comes from, as errors name
// it (never the token itself).
type namedSetting struct{ setting, value string }

func (s ServerConfig) tokens() []namedSetting {
	var out []namedSetting
	if s.Token != "" {
		out = append(out, namedSetting{"SHIP_API_TOKEN (server.token)", s.Token})
	}
	for _, t := range s.Tokens {
		out = append(out, namedSetting{fmt.Sprintf("server.tokens %q", t.Name), t.Token})
	}
	return out
}

// validate checks the server section as far as it does not depend on the
// listen address (see CheckExposure for that).
func (s ServerConfig) validate() error {
	if err := checkTokenChars("SHIP_API_TOKEN (server.token)", s.Token); err != nil {
		return err
	}
	names := map[string]bool{}
	seen := map[string]string{} // token → the setting that has it
	if s.Token != "" {
		seen[s.Token] = "SHIP_API_TOKEN (server.token)"
	}
	for i, t := range s.Tokens {
		where := fmt.Sprintf("server.tokens[%d]", i)
		if !validTokenName(t.Name) {
			return fmt.Errorf("%w: %s: name %q must be 1 to %d characters of A-Z a-z 0-9 . _ -", ErrInvalid, where, t.Name, maxTokenNameLen)
		}
		where = fmt.Sprintf("server.tokens %q", t.Name)
		if names[t.Name] {
			return fmt.Errorf("%w: %s is named twice: each named token needs a name of its own", ErrInvalid, where)
		}
		names[t.Name] = true
		if t.Token == "" {
			return fmt.Errorf("%w: %s has no token: set it, e.g. \"token\": \"${CI_TOKEN}\" and CI_TOKEN=$(openssl rand -hex 32)", ErrInvalid, where)
		}
		if err := checkTokenChars(where, t.Token); err != nil {
			return err
		}
		if other, ok := seen[t.Token]; ok {
			return fmt.Errorf("%w: %s has the same token as %s: give each its own", ErrInvalid, where, other)
		}
		seen[t.Token] = where
		if err := checkIdentity(where, t.Identity); err != nil {
			return err
		}
	}
	return nil
}

func validTokenName(name string) bool {
	if name == "" || len(name) > maxTokenNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// checkTokenChars refuses a token that could never match: the server trims
// what a client sends, and a header cannot carry control characters.
func checkTokenChars(where, token string) error {
	if token != strings.TrimSpace(token) || strings.ContainsFunc(token, unicode.IsControl) {
		return fmt.Errorf("%w: %s must not start or end with whitespace or hold control characters (check the quoting in .env)", ErrInvalid, where)
	}
	return nil
}

// checkIdentity keeps a named token's identity a plain api identity: not
// one ship gives other callers, nothing a role glob would read as a
// pattern.
func checkIdentity(where, id string) error {
	rest, ok := strings.CutPrefix(id, chat.ChannelAPI+":")
	switch {
	case !ok || rest == "" || utf8.RuneCountInString(id) > maxIdentityLen:
		return fmt.Errorf("%w: %s: identity %q must be api:<name>, at most %d characters, e.g. \"api:ci-bot\"", ErrInvalid, where, id, maxIdentityLen)
	case strings.ContainsFunc(rest, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == '*' || r == '?' }):
		return fmt.Errorf("%w: %s: identity %q must not hold whitespace, control characters, * or ?", ErrInvalid, where, id)
	case id == chat.APIAnonymous || id == chat.APIToken || id == chat.APIConsole:
		return fmt.Errorf("%w: %s: identity %s is ship's own (callers without a token, SHIP_API_TOKEN, the console): pick another", ErrInvalid, where, id)
	}
	return nil
}

// strongToken estimates whether token is as hard to guess as 32 random
// bytes: its length times log2 of its alphabet, the alphabet being 10 for
// digits only, 16 for hex, else the classes it draws from (26 lower, 26
// upper, 10 digits, 33 other); and it must use 10 different characters.
// It cannot tell random from chosen, but it stops the usual mistakes:
// short tokens, words, one character repeated.
func strongToken(token string) bool {
	distinct := map[rune]bool{}
	var lower, upper, digit, other, hex bool
	hex = true
	for _, r := range token {
		distinct[r] = true
		switch {
		case 'a' <= r && r <= 'z':
			lower = true
		case 'A' <= r && r <= 'Z':
			upper = true
		case '0' <= r && r <= '9':
			digit = true
		default:
			other = true
		}
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			hex = false
		}
	}
	var alphabet int
	switch {
	case digit && !lower && !upper && !other:
		alphabet = 10
	case hex:
		alphabet = 16
	default:
		for _, c := range []struct {
			used bool
			size int
		}{{lower, 26}, {upper, 26}, {digit, 10}, {other, 33}} {
			if c.used {
				alphabet += c.size
			}
		}
	}
	if alphabet < 2 || len(distinct) < minTokenDistinct {
		return false
	}
	bits := float64(utf8.RuneCountInString(token)) * math.Log2(float64(alphabet))
	return bits >= minTokenBits
}

// UnprovenAPIMembers returns the members of tools.roles that name an api
// identity no caller has: API identities come from tokens (server.tokens,
// api:token, api:console, api:anonymous), and a request's userId no longer
// makes one. ship start warns about each, so a role written for
// "api:alice" does not stop working without a word. Globs ("api:*") are
// left alone.
func (c Config) UnprovenAPIMembers() []string {
	var tools struct {
		Roles map[string]struct {
			Members []string `json:"members"`
		} `json:"roles"`
	}
	if len(c.Tools.Policy) == 0 || json.Unmarshal(c.Tools.Policy, &tools) != nil {
		return nil // the policy's own parse reports a broken section
	}
	known := map[string]bool{chat.APIAnonymous: true, chat.APIToken: true, chat.APIConsole: true}
	for _, t := range c.Server.Tokens {
		known[t.Identity] = true
	}
	var out []string
	for _, role := range tools.Roles {
		for _, m := range role.Members {
			if strings.HasPrefix(m, chat.ChannelAPI+":") && !strings.ContainsAny(m, "*?") && !known[m] {
				out = append(out, m)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
