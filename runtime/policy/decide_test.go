package policy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// lists are the three rule lists of one layer.
type lists struct{ allow, deny, approval []string }

// layered builds a policy and a narrowing with rules in chosen layers: the
// role "r" has member telegram:1 and the chat entry matches every chat.
func layered(t *testing.T, by map[Layer]lists) (*Policy, Narrowing) {
	t.Helper()
	obj := func(l lists) map[string]any {
		m := map[string]any{}
		if l.allow != nil {
			m["allow"] = l.allow
		}
		if l.deny != nil {
			m["deny"] = l.deny
		}
		if l.approval != nil {
			m["requireApproval"] = l.approval
		}
		return m
	}
	cfg := obj(by[LayerGlobal])
	role := obj(by[LayerRole])
	role["members"] = []string{"telegram:1"}
	cfg["roles"] = map[string]any{"r": role}
	cfg["chats"] = map[string]any{"telegram:chat:*": obj(by[LayerChat])}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(raw)
	if err != nil {
		t.Fatalf("Parse(%s): %v", raw, err)
	}
	req := by[LayerRequest]
	if req.allow != nil {
		t.Fatal("the request layer has no allow list")
	}
	return p, Narrowing{Deny: req.deny, RequireApproval: req.approval}
}

var (
	subj      = Subject{Identity: "telegram:1", ChatKey: "telegram:chat:-1001"}
	allLayers = []Layer{LayerGlobal, LayerRole, LayerChat, LayerRequest}
	grantable = []Layer{LayerGlobal, LayerRole, LayerChat}
)

func TestDenyBeatsAllowAcrossEveryLayerPair(t *testing.T) {
	shapes := []struct {
		name, allow, deny string
		call              Call
	}{
		{"bare", "exec_shell", "exec_shell", Call{"exec_shell", "ls"}},
		{"pattern deny", "exec_shell", "exec_shell(rm *)", Call{"exec_shell", "rm -rf /tmp/x"}},
		{"pattern both", "exec_shell(rm *)", "exec_shell(rm -rf*)", Call{"exec_shell", "rm -rf /tmp/x"}},
		{"tool glob", "mcp.github.*", "mcp.*", Call{"mcp.github.create_issue", ""}},
	}
	for _, sh := range shapes {
		for _, a := range grantable {
			for _, d := range allLayers {
				t.Run(fmt.Sprintf("%s/allow@%s/deny@%s", sh.name, a, d), func(t *testing.T) {
					by := map[Layer]lists{}
					l := by[a]
					l.allow = []string{sh.allow}
					by[a] = l
					l = by[d]
					l.deny = []string{sh.deny}
					by[d] = l
					p, n := layered(t, by)
					for _, def := range []Verdict{Allow, Deny, RequireApproval} {
						got := p.Decide(subj, sh.call, n, def)
						if got.Verdict != Deny || got.Layer != d || got.Rule != sh.deny {
							t.Errorf("default %s: got %+v, want deny by %s rule %q", def, got, d, sh.deny)
						}
					}
					// Without the deny the allow holds, so the deny decided.
					by[d] = lists{allow: by[d].allow}
					p, n = layered(t, by)
					if got := p.Decide(subj, sh.call, n, Deny); got.Verdict != Allow || got.Layer != a {
						t.Errorf("without the deny: got %+v, want allow by %s", got, a)
					}
				})
			}
		}
	}
}

func TestUpperLayerOverridesLowerForAllowAndApproval(t *testing.T) {
	call := Call{"exec_shell", "git status"}
	for _, a := range grantable {
		for _, r := range allLayers {
			t.Run(fmt.Sprintf("allow@%s/approval@%s", a, r), func(t *testing.T) {
				by := map[Layer]lists{a: {allow: []string{"exec_shell(git *)"}}}
				l := by[r]
				l.approval = []string{"exec_shell"}
				by[r] = l
				p, n := layered(t, by)
				got := p.Decide(subj, call, n, Deny)
				want, layer := Allow, a
				if r.rank() >= a.rank() {
					want, layer = RequireApproval, r
				}
				if got.Verdict != want || got.Layer != layer {
					t.Errorf("got %+v, want %s by %s", got, want, layer)
				}
			})
		}
	}
}

func TestRequireApprovalNeverAllowsByItself(t *testing.T) {
	call := Call{"exec_shell", "git status"}
	for _, r := range allLayers {
		by := map[Layer]lists{r: {approval: []string{"exec_shell"}}}
		p, n := layered(t, by)
		if got := p.Decide(subj, call, n, Deny); got.Verdict != Deny || got.Layer != LayerDefault ||
			!strings.Contains(got.Reason, "does not allow by itself") {
			t.Errorf("approval@%s with default deny: got %+v", r, got)
		}
		if got := p.Decide(subj, call, n, Allow); got.Verdict != RequireApproval || got.Layer != r {
			t.Errorf("approval@%s with default allow: got %+v", r, got)
		}
	}
}

func TestRequestLayerCannotGrant(t *testing.T) {
	if _, err := ParseNarrowing(json.RawMessage(`{"allow":["exec_shell"]}`)); err == nil || !strings.Contains(err.Error(), "only narrow") {
		t.Fatalf("ParseNarrowing with allow: %v", err)
	}
	n, err := ParseNarrowing(json.RawMessage(`{"deny":["mcp.*"],"requireApproval":["exec_shell"]}`))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := layered(t, map[Layer]lists{LayerGlobal: {allow: []string{"chat_send", "exec_shell", "mcp.x"}}})
	for _, tc := range []struct {
		call Call
		def  Verdict
		want Verdict
	}{
		{Call{"exec_shell", "ls"}, Deny, RequireApproval}, // narrowed from allow
		{Call{"exec_shell2", "ls"}, Deny, Deny},           // nothing to narrow
		{Call{"mcp.x", ""}, Allow, Deny},
		{Call{"chat_send", ""}, Allow, Allow},
	} {
		if got := p.Decide(subj, tc.call, n, tc.def); got.Verdict != tc.want {
			t.Errorf("%v: got %+v, want %s", tc.call, got, tc.want)
		}
	}
	if _, err := ParseNarrowing(json.RawMessage(`{"deny":["exec_shell("]}`)); err == nil {
		t.Error("a bad request rule was accepted")
	}
	bad := Narrowing{Deny: []string{"bad name"}}
	if bad.Validate() == nil {
		t.Error("Validate accepted a bad rule")
	}
	if got := p.Decide(subj, Call{"chat_send", ""}, bad, Allow); got.Verdict != Deny || got.Layer != LayerRequest {
		t.Errorf("invalid narrowing: got %+v, want deny", got)
	}
}

func TestCommandMatching(t *testing.T) {
	p, _ := layered(t, map[Layer]lists{LayerGlobal: {
		allow: []string{"exec_shell(git status*)", "exec_shell(make test)", "exec_shell(ls *)", "exec_shell(echo *)"},
		deny:  []string{"exec_shell(rm -rf*)", "exec_shell(curl * | sh)"},
	}})
	for _, tc := range []struct {
		arg  string
		want Verdict
	}{
		{"git status", Allow},
		{"  git   status\t-s ", Allow},
		{"make test", Allow},
		{"make test2", Deny},
		{"git status; ls -l", Allow},
		{"git status && make test", Allow},
		{"rm -rf /tmp/x", Deny},
		{"git status; rm -rf /", Deny},
		{"git status && x", Deny},
		{"git status || x", Deny},
		{"git status | sh", Deny},
		{"git status & x", Deny},
		{"git status\nx", Deny},
		{"git status\rx", Deny},
		{"git $(rm)", Deny},
		{"git status `id`", Deny},
		{"git status > f", Deny},
		{"git status < f", Deny},
		{"git status 2>&1", Deny},
		{"git status\x00", Deny},
		{";", Deny},
		{"", Deny},
		{strings.Repeat("a", maxArgBytes+1), Deny},
	} {
		if got := p.Decide(subj, Call{"exec_shell", tc.arg}, Narrowing{}, Deny); got.Verdict != tc.want {
			t.Errorf("%q: got %+v, want %s", tc.arg, got, tc.want)
		}
	}
	// Deny patterns look inside: each of these is denied by a rule, not
	// merely by default.
	for _, arg := range []string{
		"rm -rf /", "rm -rf /tmp/x", "ls; sudo rm -rf /", "echo $(rm -rf /)", "echo `rm -rf /`", "ls | xargs rm -rf",
		"if true; then rm -rf /; fi", "/bin/rm -rf /", `r'm' -rf /`, `\rm -rf /`, "(rm -rf /)",
		"{ rm -rf /; }", "rm -rf / > log", "FOO=1 rm -rf /", "curl x | sh", "curl   x|sh",
	} {
		got := p.Decide(subj, Call{"exec_shell", arg}, Narrowing{}, Allow)
		if got.Verdict != Deny || got.Layer != LayerGlobal {
			t.Errorf("%q: got %+v, want deny by a global rule", arg, got)
		}
	}
	// A rule without parentheses allows what no pattern can.
	bare, _ := layered(t, map[Layer]lists{LayerRole: {allow: []string{"exec_shell"}}, LayerGlobal: {deny: []string{"exec_shell(rm *)"}}})
	for arg, want := range map[string]Verdict{"git status > f": Allow, "git $(date)": Allow, "echo $(rm x)": Deny} {
		if got := bare.Decide(subj, Call{"exec_shell", arg}, Narrowing{}, Deny); got.Verdict != want {
			t.Errorf("bare allow, %q: got %+v, want %s", arg, got, want)
		}
	}
	// Argument patterns only match calls with an argument.
	mcp, _ := layered(t, map[Layer]lists{LayerGlobal: {allow: []string{"mcp.x(*)"}, deny: []string{"mcp.y(*)"}}})
	if got := mcp.Decide(subj, Call{"mcp.x", ""}, Narrowing{}, Deny); got.Verdict != Deny {
		t.Errorf("pattern allowed a call without an argument: %+v", got)
	}
	if got := mcp.Decide(subj, Call{"mcp.y", ""}, Narrowing{}, Allow); got.Verdict != Allow {
		t.Errorf("pattern denied a call without an argument: %+v", got)
	}
}

func TestSegmentsDecidedByDifferentLayers(t *testing.T) {
	p, _ := layered(t, map[Layer]lists{
		LayerGlobal: {allow: []string{"exec_shell(ls *)"}},
		LayerRole:   {allow: []string{"exec_shell(git *)"}},
		LayerChat:   {approval: []string{"exec_shell(git push*)"}},
	})
	for arg, want := range map[string]Verdict{
		"ls -l; git status":   Allow,
		"ls -l; git push":     RequireApproval,
		"git status; ls -l":   Allow,
		"git push --force":    RequireApproval,
		"ls -l; git $(x)":     Deny,
		"git push $(x)":       Deny,
		"ls -l; cat /etc/pwd": Deny,
	} {
		got := p.Decide(subj, Call{"exec_shell", arg}, Narrowing{}, Deny)
		if got.Verdict != want {
			t.Errorf("%q: got %+v, want %s", arg, got, want)
		}
	}
	got := p.Decide(subj, Call{"exec_shell", "ls -l; git status"}, Narrowing{}, Deny)
	if !strings.Contains(got.Reason, `"ls -l" by global rule`) || !strings.Contains(got.Reason, `"git status" by role r rule`) {
		t.Errorf("reason does not explain both parts: %q", got.Reason)
	}
	// An approval pattern also matches inside an unsafe command that a bare
	// allow lets through.
	q, _ := layered(t, map[Layer]lists{LayerGlobal: {allow: []string{"exec_shell"}}, LayerChat: {approval: []string{"exec_shell(git push*)"}}})
	if got := q.Decide(subj, Call{"exec_shell", "git push $(x)"}, Narrowing{}, Deny); got.Verdict != RequireApproval {
		t.Errorf("unsafe git push: got %+v, want requireApproval", got)
	}
}

func TestOffered(t *testing.T) {
	p, _ := layered(t, map[Layer]lists{
		LayerGlobal: {allow: []string{"chat_*"}, deny: []string{"mcp.evil.*", "exec_shell(rm *)"}},
		LayerRole:   {allow: []string{"exec_shell(git *)", "mcp.evil.x"}},
		LayerChat:   {approval: []string{"mcp.slow"}},
	})
	other := Subject{Identity: "telegram:2", ChatKey: subj.ChatKey}
	for _, tc := range []struct {
		s    Subject
		tool string
		n    Narrowing
		def  Verdict
		want bool
	}{
		{subj, "chat_send", Narrowing{}, Deny, true},
		{subj, "exec_shell", Narrowing{}, Deny, true}, // a pattern deny leaves other calls
		{other, "exec_shell", Narrowing{}, Deny, false},
		{other, "exec_shell", Narrowing{}, Allow, true},
		{subj, "mcp.evil.x", Narrowing{}, Allow, false}, // bare deny wins
		{subj, "mcp.slow", Narrowing{}, Deny, false},    // approval alone allows nothing
		{subj, "mcp.slow", Narrowing{}, Allow, true},
		{subj, "chat_send", Narrowing{Deny: []string{"chat_*"}}, Allow, false},
		{subj, "chat_send", Narrowing{Deny: []string{"chat_send(x)"}}, Allow, true},
		{subj, "chat_send", Narrowing{Deny: []string{"bad rule"}}, Allow, false},
	} {
		if got := p.Offered(tc.s, tc.tool, tc.n, tc.def); got != tc.want {
			t.Errorf("Offered(%v, %s, %v, %s) = %v, want %v", tc.s, tc.tool, tc.n, tc.def, got, tc.want)
		}
	}
	rules := p.Rules(subj, "exec_shell")
	if len(rules) != 2 || rules[0].Layer != LayerRole || rules[1].Text != "exec_shell(rm *)" || rules[1].Verdict != Deny {
		t.Errorf("Rules = %+v", rules)
	}
}

func TestRolesByIdentity(t *testing.T) {
	p, err := Parse(json.RawMessage(`{"roles": {
		"admin": {"members": ["telegram:123456", "feishu:ou_x"], "approve": true},
		"ops":   {"members": ["telegram:123456", "qq:ABCD"]},
		"api":   {"members": ["api:*"], "allow": ["exec_shell"]},
		"team":  {"members": ["telegram:12*"]}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string][]string{
		"telegram:123456": {"admin", "ops", "team"},
		"telegram:129":    {"team"},
		"telegram:1":      nil,
		"feishu:ou_x":     {"admin"},
		"feishu:ou_xy":    nil,
		"qq:ABCD":         {"ops"},
		"qq:abcd":         nil,
		"api:client-7":    {"api"},
		"api:":            {"api"},
		"":                nil,
	} {
		if got := p.Roles(id); !slices.Equal(got, want) {
			t.Errorf("Roles(%q) = %v, want %v", id, got, want)
		}
	}
	if !p.CanApprove("feishu:ou_x") || p.CanApprove("qq:ABCD") || p.CanApprove("api:x") {
		t.Error("CanApprove wrong")
	}
	if got := p.Decide(Subject{Identity: "api:x"}, Call{"exec_shell", "ls"}, Narrowing{}, Deny); got.Verdict != Allow || got.Source != "role api" {
		t.Errorf("api role: %+v", got)
	}
	var nilPolicy *Policy
	if nilPolicy.Roles("x") != nil || nilPolicy.CanApprove("x") || nilPolicy.Decide(subj, Call{"t", ""}, Narrowing{}, Allow).Verdict != Allow {
		t.Error("nil policy is not empty")
	}
}

// TestWorkedExample checks the example of the package documentation.
func TestWorkedExample(t *testing.T) {
	p, err := Parse(json.RawMessage(`{
	  "allow": ["chat_*"],
	  "deny": ["exec_shell(rm *)"],
	  "roles": {
	    "admin": {
	      "members": ["telegram:123456", "feishu:ou_abc", "api:*"],
	      "allow": ["exec_shell(git *)", "exec_shell(make test)"],
	      "approve": true
	    }
	  },
	  "chats": {
	    "telegram:chat:-100*": {"requireApproval": ["exec_shell"]}
	  },
	  "approvalTTLSeconds": 600, "grantTTLSeconds": 600, "grantMaxUses": 1
	}`))
	if err != nil {
		t.Fatal(err)
	}
	admin, member := "telegram:123456", "telegram:777"
	group, private := "telegram:chat:-100123", "telegram:chat:123456"
	for _, tc := range []struct {
		who, chat, tool, arg string
		want                 Verdict
		layer                Layer
	}{
		{member, group, "chat_send", "", Allow, LayerGlobal},
		{member, group, "exec_shell", "git status", Deny, LayerDefault},
		{member, private, "exec_shell", "ls", Deny, LayerDefault},
		{admin, private, "exec_shell", "git status", Allow, LayerRole},
		{admin, group, "exec_shell", "git status", RequireApproval, LayerChat},
		{admin, group, "exec_shell", "make test", RequireApproval, LayerChat},
		{admin, private, "exec_shell", "make test && rm -rf build", Deny, LayerGlobal},
		{admin, private, "exec_shell", "git log > f", Deny, LayerDefault},
		{"api:x", "api:chat:default", "exec_shell", "git diff", Allow, LayerRole},
	} {
		got := p.Decide(Subject{tc.who, tc.chat}, Call{tc.tool, tc.arg}, Narrowing{}, map[string]Verdict{"chat_send": Allow}[tc.tool])
		if got.Verdict != tc.want || got.Layer != tc.layer || got.Reason == "" {
			t.Errorf("%s in %s: %s(%q): got %+v, want %s by %s", tc.who, tc.chat, tc.tool, tc.arg, got, tc.want, tc.layer)
		}
	}
	if !p.Offered(Subject{admin, group}, "exec_shell", Narrowing{}, Deny) || p.Offered(Subject{member, group}, "exec_shell", Narrowing{}, Deny) {
		t.Error("exec_shell must be offered to admins only")
	}
	if o := p.StoreOptions(); o.ApprovalTTL.Seconds() != 600 || o.GrantMaxUses != 1 {
		t.Errorf("StoreOptions = %+v", o)
	}
}

func TestChatsMergeIntoOneLayer(t *testing.T) {
	p, err := Parse(json.RawMessage(`{
		"roles": {"a": {"members": ["qq:1"], "allow": ["exec_shell(ls*)"]}, "b": {"members": ["qq:1"], "requireApproval": ["exec_shell(ls -R*)"]}},
		"chats": {"qq:group:*": {"allow": ["exec_shell(make *)"]}, "qq:group:7*": {"requireApproval": ["exec_shell(make deploy)"]}}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	s := Subject{Identity: "qq:1", ChatKey: "qq:group:77"}
	for arg, want := range map[string]Verdict{
		"make test":   Allow,
		"make deploy": RequireApproval, // two chat entries, one layer: approval beats allow
		"ls -l":       Allow,
		"ls -R /":     RequireApproval, // two roles, one layer
	} {
		if got := p.Decide(s, Call{"exec_shell", arg}, Narrowing{}, Deny); got.Verdict != want {
			t.Errorf("%q: got %+v, want %s", arg, got, want)
		}
	}
	if got := p.Decide(Subject{Identity: "qq:1", ChatKey: "qq:group:8"}, Call{"exec_shell", "make deploy"}, Narrowing{}, Deny); got.Verdict != Allow {
		t.Errorf("the other chat: %+v", got)
	}
}

// TestAnonymousAPIMatchesOnlyByName: no member glob takes in the
// identity every unauthenticated API caller has.
func TestAnonymousAPIMatchesOnlyByName(t *testing.T) {
	p, err := Parse(json.RawMessage(`{"roles": {
		"api":   {"members": ["api:*"], "allow": ["exec_shell"], "approve": true},
		"a":     {"members": ["api:a*", "api:anon*"]},
		"anon":  {"members": ["api:anonymous"], "allow": ["chat_send"]}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	anon := AnonymousAPI
	if anon != "api:anonymous" {
		t.Fatalf("AnonymousAPI = %q: the server and ship.json spell it api:anonymous", anon)
	}
	if got := p.Roles(anon); !slices.Equal(got, []string{"anon"}) {
		t.Errorf("Roles(%q) = %v, want [anon]", anon, got)
	}
	if got := p.Roles("api:anonymous2"); !slices.Equal(got, []string{"a", "api"}) {
		t.Errorf("Roles(api:anonymous2) = %v, want [a api]", got)
	}
	if p.CanApprove(anon) {
		t.Error("api:* lets the anonymous caller approve")
	}
	s := Subject{Identity: anon, ChatKey: "api:chat:default"}
	if got := p.Decide(s, Call{"exec_shell", "ls"}, Narrowing{}, Deny); got.Verdict != Deny || got.Layer != LayerDefault {
		t.Errorf("anonymous exec_shell: %+v, want denied by default", got)
	}
	if p.Offered(s, "exec_shell", Narrowing{}, Deny) {
		t.Error("exec_shell offered to the anonymous caller")
	}
	if got := p.Rules(s, "chat_send"); len(got) != 1 || got[0].Source != "role anon" {
		t.Errorf("Rules = %+v, want the anon role's rule", got)
	}
}
