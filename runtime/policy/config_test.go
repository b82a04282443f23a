package policy

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseStrict(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		want      []string // substrings of the error
	}{
		{"unknown top field", `{"alow": ["x"]}`, []string{`tools: unknown field "alow"`, `did you mean "allow"`}},
		{"unknown role field", `{"roles": {"admin": {"members": [], "aprove": true}}}`, []string{`tools.roles.admin: unknown field "aprove"`, `"approve"`}},
		{"unknown chat field", `{"chats": {"telegram:chat:*": {"permit": []}}}`, []string{`tools.chats.telegram:chat:*: unknown field "permit"`}},
		{"not an object", `["x"]`, []string{"tools: must be an object"}},
		{"list of strings", `{"allow": "exec_shell"}`, []string{"tools.allow: must be a list of strings"}},
		{"approve type", `{"roles": {"a": {"approve": "yes"}}}`, []string{"tools.roles.a.approve: must be true or false"}},
		{"ttl", `{"approvalTTLSeconds": -1}`, []string{"tools.approvalTTLSeconds: must be a whole number"}},
		{"ttl fraction", `{"grantTTLSeconds": 1.5}`, []string{"tools.grantTTLSeconds"}},
		{"uses", `{"grantMaxUses": 0}`, []string{"tools.grantMaxUses"}},
		{"empty rule", `{"allow": [""]}`, []string{"tools.allow[0]", "empty rule"}},
		{"unclosed", `{"deny": ["x", "exec_shell(git *"]}`, []string{"tools.deny[1]", `missing closing ")"`}},
		{"empty pattern", `{"allow": ["exec_shell()"]}`, []string{"empty argument pattern"}},
		{"blank pattern", `{"allow": ["exec_shell(  )"]}`, []string{"empty argument pattern"}},
		{"no tool", `{"allow": ["(git *)"]}`, []string{"no tool name"}},
		{"bad tool char", `{"requireApproval": ["exec shell"]}`, []string{"tools.requireApproval[0]", `character ' '`}},
		{"stray paren", `{"allow": ["exec_shell)"]}`, []string{`character ')'`}},
		{"allow with $", `{"allow": ["exec_shell(echo $HOME)"]}`, []string{"tools.allow[0]", "can never allow", "parameter expansion"}},
		{"allow with open quote", `{"roles": {"a": {"allow": ["exec_shell(echo 'x)"]}}}`, []string{"tools.roles.a.allow[0]", "unterminated quote"}},
		{"control char", `{"allow": ["exec_shell(a\u0001)"]}`, []string{"control character"}},
		{"bad role rule", `{"roles": {"a": {"allow": ["x("]}}}`, []string{"tools.roles.a.allow[0]"}},
		{"bad chat rule", `{"chats": {"c": {"deny": ["x y"]}}}`, []string{"tools.chats.c.deny[0]"}},
		{"role name", `{"roles": {"a b": {}}}`, []string{`role name "a b"`}},
		{"member no channel", `{"roles": {"a": {"members": ["123456"]}}}`, []string{`tools.roles.a.members[0] "123456"`, "channel:userId"}},
		{"member inner star", `{"roles": {"a": {"members": ["telegram:*1"]}}}`, []string{"trailing"}},
		{"member question", `{"roles": {"a": {"members": ["telegram:1?"]}}}`, []string{"trailing"}},
		{"member empty user", `{"roles": {"a": {"members": ["api:"]}}}`, []string{`"api:*"`}},
		{"member channel glob", `{"roles": {"a": {"members": ["*:1"]}}}`, []string{"channel"}},
		{"member blank", `{"roles": {"a": {"members": ["api:a b"]}}}`, []string{"blank"}},
		{"chat pattern", `{"chats": {" x": {}}}`, []string{"chat pattern"}},
		{"roles type", `{"roles": []}`, []string{"tools.roles: must be an object"}},
		{"role null", `{"roles": {"a": null}}`, []string{"tools.roles.a: must be an object"}},
		{"broken json", `{"allow": [`, []string{"must be an object"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse(json.RawMessage(tc.raw))
			if err == nil {
				t.Fatalf("Parse(%s) = %+v, want an error", tc.raw, p)
			}
			if !errors.Is(err, ErrConfig) {
				t.Errorf("error does not wrap ErrConfig: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestParseAccepts(t *testing.T) {
	for _, raw := range []string{``, `null`, ` {} `, `{"allow": null, "roles": null, "chats": {}}`,
		`{"allow": ["exec_shell(echo (a))", "mcp-x.y:z/w*", "a?"], "roles": {"r_1-x": {"members": ["api:*", "qq:A*"]}}}`} {
		p, err := Parse(json.RawMessage(raw))
		if err != nil {
			t.Errorf("Parse(%q): %v", raw, err)
			continue
		}
		if o := p.StoreOptions(); o.ApprovalTTL != DefaultApprovalTTL || o.GrantTTL != DefaultGrantTTL || o.GrantMaxUses != 1 {
			t.Errorf("defaults: %+v", o)
		}
	}
	p, err := Parse(json.RawMessage(`{"approvalTTLSeconds": 60, "grantTTLSeconds": 120, "grantMaxUses": 3}`))
	if err != nil {
		t.Fatal(err)
	}
	if o := p.StoreOptions(); o.ApprovalTTL != time.Minute || o.GrantTTL != 2*time.Minute || o.GrantMaxUses != 3 {
		t.Errorf("StoreOptions = %+v", o)
	}
}

// FuzzParse: never panic, whatever the input.
func FuzzParse(f *testing.F) {
	f.Add(`{"allow": ["exec_shell(git *)"], "roles": {"a": {"members": ["api:*"]}}}`)
	f.Add(`{"chats": {"x": {"deny": ["(("]}}}`)
	f.Fuzz(func(t *testing.T, raw string) {
		p, err := Parse(json.RawMessage(raw))
		if err == nil {
			p.Decide(subj, Call{"exec_shell", raw}, Narrowing{Deny: []string{raw}}, Allow)
		}
	})
}

func TestGlob(t *testing.T) {
	for _, tc := range []struct {
		p, s string
		want bool
	}{
		{"", "", true},
		{"*", "", true},
		{"*", "a/b c", true},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"a?c", "aéc", true},
		{"git status*", "git status", true},
		{"git status*", "git statu", false},
		{"*.go", "x/y.go", true},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXbYbZ", false},
		{"mcp.github.*", "mcp.github.create_issue", true},
		{"mcp.github.*", "mcp.gitlab.x", false},
		{"[a]", "[a]", true},
		{"exec_shell", "exec_shell2", false},
	} {
		if got := glob(tc.p, tc.s); got != tc.want {
			t.Errorf("glob(%q, %q) = %v, want %v", tc.p, tc.s, got, tc.want)
		}
	}
}
