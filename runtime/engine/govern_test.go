package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/events"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/policy"
	"github.com/shipmyagent/ship/runtime/turn"
)

// adminPolicy: u1 may run echo and ls; "admin" may approve; rm never runs.
const adminPolicy = `{
  "deny": ["exec_shell(rm -rf*)"],
  "roles": {
    "dev":   {"members": ["telegram:u1"], "allow": ["exec_shell(echo *)", "exec_shell(ls*)", "exec_shell(rm *)"]},
    "admin": {"members": ["telegram:boss"], "approve": true}
  }
}`

func TestAllowedCommandRunsAndItsOutputReachesTheModel(t *testing.T) {
	h := newHarness(t, harnessOptions{handler: fakeopenai.RunCommands, exec: true, policy: adminPolicy})
	if o := h.ask("1", "m1", "run: echo hello-from-shell"); o.Err != nil {
		t.Fatal(o.Err)
	}
	got := strings.Join(h.out.texts(chatKeyOf("1")), "\n")
	if !strings.Contains(got, "hello-from-shell") || !strings.Contains(got, `"exitCode":0`) {
		t.Errorf("the chat got %q, want the command's output and exit code", got)
	}
	// The audit: the call and its outcome are in the chat log.
	if es := h.entries(chatKeyOf("1")); !strings.Contains(roles(es), "tool:exec_shell") {
		t.Errorf("chat log %s has no exec_shell entry", roles(es))
	}
}

func TestDeniedToolIsNotOffered(t *testing.T) {
	h := newHarness(t, harnessOptions{handler: fakeopenai.RunCommands, exec: true, policy: adminPolicy})
	// u2 is in no role: exec_shell's default is deny, so the model never
	// sees it.
	done := make(chan ingress.Outcome, 1)
	if _, err := h.engine.Submit(context.Background(), ingress.Submission{
		Channel: testChannel, ChatKey: chatKeyOf("2"),
		Message: ingress.IncomingChatMessage{ChatID: "2", Text: "run: echo hi", MessageID: "m1", UserID: "u2", ChatType: "private"},
		OnDone:  func(o ingress.Outcome) { done <- o },
	}); err != nil {
		t.Fatal(err)
	}
	<-done
	reqs := h.fake.Requests()
	if len(reqs) == 0 || reqs[0].HasTool("exec_shell") || !reqs[0].HasTool("chat_send") {
		t.Fatalf("first request offers %v; want chat tools without exec_shell", reqs[0].Tools)
	}
	if got := h.out.texts(chatKeyOf("2")); len(got) != 1 || got[0] != "no shell" {
		t.Errorf("chat got %q", got)
	}
	// u1 (role dev) is offered it.
	h.ask("1", "m1", "run: echo hi")
	if reqs := h.fake.Requests(); !reqs[len(reqs)-1].HasTool("exec_shell") {
		t.Error("exec_shell not offered to a dev")
	}
}

func TestRequestNarrowingHidesATool(t *testing.T) {
	h := newHarness(t, harnessOptions{handler: fakeopenai.RunCommands, exec: true, policy: adminPolicy})
	done := make(chan ingress.Outcome, 1)
	if _, err := h.engine.Submit(context.Background(), ingress.Submission{Turn: turn.Turn{Tools: turn.Tools(policy.Narrowing{Deny: []string{"exec_shell"}})}, Channel: testChannel, ChatKey: chatKeyOf("1"), Message: ingress.IncomingChatMessage{ChatID: "1", Text: "run: echo hi", MessageID: "m1", UserID: "u1", ChatType: "private"}, OnDone: func(o ingress.Outcome) { done <- o }}); err != nil {
		t.Fatal(err)
	}
	<-done
	if got := h.out.texts(chatKeyOf("1")); len(got) != 1 || got[0] != "no shell" {
		t.Errorf("a request that denies exec_shell still got it: chat got %q", got)
	}
}

func TestRmRfIsRefusedAndReported(t *testing.T) {
	h := newHarness(t, harnessOptions{handler: fakeopenai.RunCommands, exec: true, policy: adminPolicy})
	victim := filepath.Join(h.dir, "x")
	if err := os.Mkdir(victim, 0o755); err != nil {
		t.Fatal(err)
	}
	sub, _ := h.engine.Subscribe(func(e events.Event) bool { return e.Type == events.TypePolicyRejected }, 0, 16)
	defer sub.Close()
	// dev may run "rm *", but the global deny of "rm -rf*" wins.
	h.ask("1", "m1", "run: rm -rf "+victim)
	if _, err := os.Stat(victim); err != nil {
		t.Fatalf("the folder is gone: %v", err)
	}
	got := strings.Join(h.out.texts(chatKeyOf("1")), "\n")
	if !strings.Contains(got, "refused by the tool policy") || !strings.Contains(got, "rm -rf*") {
		t.Errorf("the model was told %q; want a refusal naming the rule", got)
	}
	select {
	case e := <-sub.C:
		if e.Tool != "exec_shell" || !strings.Contains(e.Reason, "rm -rf*") || e.ChatKey != chatKeyOf("1") {
			t.Errorf("policy_rejected event = %+v", e)
		}
	case <-time.After(10 * time.Second): // hang guard
		t.Fatal("no policy_rejected event")
	}
	var outcome string
	for _, e := range h.entries(chatKeyOf("1")) {
		if e.Role == chat.RoleTool {
			outcome, _ = e.Meta["outcome"].(string)
		}
	}
	if outcome != "policy_rejected" {
		t.Errorf("audit entry outcome = %q, want policy_rejected", outcome)
	}
}

func TestSecretsNeverReachTheModelTheLogOrTheChatLog(t *testing.T) {
	const secret = "sk-very-secret-0123456789"
	t.Setenv("LLM_API_KEY", secret)
	// "$LLM_API_KEY" is parameter expansion, which only a rule without an
	// argument pattern allows.
	shell := `{"roles": {"dev": {"members": ["telegram:u1"], "allow": ["exec_shell"]}}}`
	h := newHarness(t, harnessOptions{handler: fakeopenai.RunCommands, exec: true, policy: shell, secrets: []string{secret}, logAll: true})
	// The variable is gone from the child's environment; the value, put
	// together and printed anyway, is redacted.
	h.ask("1", "m1", `run: echo "env=[$LLM_API_KEY]" "sk-very-"secret-0123456789`)
	got := strings.Join(h.out.texts(chatKeyOf("1")), "\n")
	if !strings.Contains(got, "env=[]") || !strings.Contains(got, "<redacted>") {
		t.Errorf("tool result %q: want an empty variable and <redacted>", got)
	}
	for _, r := range h.fake.Requests() {
		if strings.Contains(string(r.Body), secret) {
			t.Fatal("the secret reached the model")
		}
	}
	if strings.Contains(h.logs.String(), secret) {
		t.Error("the secret is in the log")
	}
	if err := h.store.Close(); err != nil {
		t.Fatal(err)
	}
	err := filepath.Walk(filepath.Join(h.dir, ".ship"), func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), secret) {
			t.Errorf("the secret is in %s", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// approvalPolicy: in group -100, the shell needs approval; boss approves.
const approvalPolicy = `{
  "roles": {
    "dev":   {"members": ["telegram:u1"], "allow": ["exec_shell(echo *)"]},
    "admin": {"members": ["telegram:boss"], "approve": true}
  },
  "chats": {"telegram:chat:-100*": {"requireApproval": ["exec_shell"]}},
  "approvalTTLSeconds": 600
}`

// waitFor polls the outbox until a message of chatKey satisfies ok.
func (h *harness) waitFor(chatKey string, ok func(sent) bool) sent {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second) // hang guard
	for time.Now().Before(deadline) {
		for _, s := range h.out.all() {
			if s.Req.ChatKey == chatKey && ok(s) {
				return s
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	h.t.Fatalf("no such message in %s; chat has %q", chatKey, h.out.texts(chatKey))
	return sent{}
}

func approvalCode(t *testing.T, s sent) string {
	t.Helper()
	for _, b := range s.Buttons {
		if code, ok := strings.CutPrefix(b.Data, "/approve "); ok {
			return code
		}
	}
	t.Fatalf("approval request %q has no Approve button: %+v", s.Text, s.Buttons)
	return ""
}

func TestApprovalRunsTheCallOnceInANewTurn(t *testing.T) {
	h := newHarness(t, harnessOptions{handler: fakeopenai.RunCommands, exec: true, policy: approvalPolicy})
	group := chatKeyOf("-1001")
	o := h.ask("-1001", "m1", "run: echo approved-output")
	if o.Err != nil {
		t.Fatal(o.Err)
	}
	req := h.waitFor(group, func(s sent) bool { return len(s.Buttons) > 0 })
	code := approvalCode(t, req)
	if !strings.Contains(req.Text, "echo approved-output") || !strings.Contains(req.Text, "role admin") || req.Req.MessageID != "m1" {
		t.Errorf("approval request %q (reply to %q): want the command, who may approve, a reply to m1", req.Text, req.Req.MessageID)
	}
	told := strings.Join(h.out.texts(group), "\n")
	if !strings.Contains(told, "approvalRequired") || strings.Contains(told, "approved-output\\n") {
		t.Fatalf("before approval the chat got %q", told)
	}

	from := func(user, msgID string) dispatch.RequestContext {
		return dispatch.RequestContext{Channel: testChannel, ChatID: "-1001", ChatKey: group, UserID: user, ChatType: "supergroup", MessageID: msgID}
	}
	// Not an approver: nothing runs, and they hear why.
	if reply, ok := h.engine.Command(context.Background(), "approve", code, from("u1", "m2")); !ok || !strings.Contains(reply, "may not approve") {
		t.Errorf("u1's approve: %q, %v", reply, ok)
	}
	// Another chat: refused.
	other := dispatch.RequestContext{Channel: testChannel, ChatID: "7", ChatKey: chatKeyOf("7"), UserID: "boss", MessageID: "x"}
	if reply, _ := h.engine.Command(context.Background(), "approve", code, other); !strings.Contains(reply, "another chat") {
		t.Errorf("approve from another chat: %q", reply)
	}
	// The admin: no reply of its own; the turn announces and runs it.
	if reply, ok := h.engine.Command(context.Background(), "approve", strings.ToLower(code), from("boss", "m3")); !ok || reply != "" {
		t.Fatalf("boss's approve: %q, %v", reply, ok)
	}
	h.waitFor(group, func(s sent) bool { return strings.HasPrefix(s.Text, "Approved by telegram:boss") })
	res := h.waitFor(group, func(s sent) bool { return strings.Contains(s.Text, "approved-output\\n") })
	if res.Req.MessageID != "m3" || res.Req.UserID != "u1" {
		t.Errorf("the result answers %q as %q; want the approving message m3, as the requester u1", res.Req.MessageID, res.Req.UserID)
	}
	h.waitIdle()
	// Twice: it was used.
	if reply, _ := h.engine.Command(context.Background(), "approve", code, from("boss", "m4")); !strings.Contains(reply, "already approved") {
		t.Errorf("second approve: %q", reply)
	}
	runs := 0
	for _, e := range h.entries(group) {
		if e.Role == chat.RoleTool && e.Meta["tool"] == "exec_shell" && e.Meta["outcome"] == "ok" {
			runs++
		}
	}
	if runs != 1 {
		t.Errorf("exec_shell ran %d times, want once", runs)
	}
	if reply, _ := h.engine.Command(context.Background(), "approve", "ZZZZZZ", from("boss", "m5")); !strings.Contains(reply, "no approval with code ZZZZZZ") {
		t.Errorf("unknown code: %q", reply)
	}
}

func TestDenyIsAnnouncedOnceAndNothingRuns(t *testing.T) {
	h := newHarness(t, harnessOptions{handler: fakeopenai.RunCommands, exec: true, policy: approvalPolicy})
	group := chatKeyOf("-1001")
	h.ask("-1001", "m1", "run: echo never")
	code := approvalCode(t, h.waitFor(group, func(s sent) bool { return len(s.Buttons) > 0 }))
	req := dispatch.RequestContext{Channel: testChannel, ChatID: "-1001", ChatKey: group, UserID: "boss", Username: "Boss", MessageID: "m2"}
	if reply, _ := h.engine.Command(context.Background(), "deny", code, req); reply != "" {
		t.Fatalf("deny answered %q", reply)
	}
	h.waitFor(group, func(s sent) bool { return strings.HasPrefix(s.Text, "Denied by Boss") })
	if reply, _ := h.engine.Command(context.Background(), "approve", code, req); !strings.Contains(reply, "already denied by telegram:boss") {
		t.Errorf("approve after deny: %q", reply)
	}
	h.waitIdle()
	for _, s := range h.out.all() {
		if strings.Contains(s.Text, "never\\n") {
			t.Errorf("a denied command ran: %q", s.Text)
		}
	}
}

func TestApprovalsSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, harnessOptions{dir: dir, handler: fakeopenai.RunCommands, exec: true, policy: approvalPolicy})
	group := chatKeyOf("-1001")
	h.ask("-1001", "m1", "run: echo after-restart")
	code := approvalCode(t, h.waitFor(group, func(s sent) bool { return len(s.Buttons) > 0 }))
	h.close()

	h2 := newHarness(t, harnessOptions{dir: dir, handler: fakeopenai.RunCommands, exec: true, policy: approvalPolicy})
	req := dispatch.RequestContext{Channel: testChannel, ChatID: "-1001", ChatKey: group, UserID: "boss", MessageID: "m2"}
	if reply, _ := h2.engine.Command(context.Background(), "approve", code, req); reply != "" {
		t.Fatalf("approve after restart: %q", reply)
	}
	h2.waitFor(group, func(s sent) bool { return strings.Contains(s.Text, "after-restart\\n") })
}

func TestAnExpiredApprovalIsAnnouncedAndCannotBeApproved(t *testing.T) {
	h := newHarness(t, harnessOptions{handler: fakeopenai.RunCommands, exec: true,
		policy: strings.Replace(approvalPolicy, `"approvalTTLSeconds": 600`, `"approvalTTLSeconds": 1`, 1)})
	group := chatKeyOf("-1001")
	h.ask("-1001", "m1", "run: echo too-late")
	code := approvalCode(t, h.waitFor(group, func(s sent) bool { return len(s.Buttons) > 0 }))
	h.waitFor(group, func(s sent) bool {
		return strings.Contains(s.Text, "expired unanswered") && strings.Contains(s.Text, code)
	})
	req := dispatch.RequestContext{Channel: testChannel, ChatID: "-1001", ChatKey: group, UserID: "boss", MessageID: "m2"}
	if reply, _ := h.engine.Command(context.Background(), "approve", code, req); !strings.Contains(reply, "expired") {
		t.Errorf("approve after expiry: %q", reply)
	}
	n := 0
	for _, s := range h.out.all() {
		if strings.Contains(s.Text, "expired unanswered") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("expiry announced %d times, want once", n)
	}
}

func TestConsoleDecidesApprovalsWithTheChatsRules(t *testing.T) {
	h := newHarness(t, harnessOptions{handler: fakeopenai.RunCommands, exec: true, policy: approvalPolicy})
	group := chatKeyOf("-1001")
	h.ask("-1001", "m1", "run: echo from-console")
	code := approvalCode(t, h.waitFor(group, func(s sent) bool { return len(s.Buttons) > 0 }))
	ctx := context.Background()

	// The console is a decider from outside any chat, acting as its role.
	console := func(role string) engine.Decider {
		return engine.Decider{Identity: "console:" + role, Name: "the console (" + role + ")", AsRole: role}
	}
	var refused *engine.RefusalError
	if err := h.engine.Decide(ctx, code, true, console("")); !errors.Is(err, policy.ErrNotApprover) || !errors.As(err, &refused) {
		t.Errorf("no console role: %v", err)
	}
	if err := h.engine.Decide(ctx, code, true, console("dev")); !errors.As(err, &refused) || !strings.Contains(refused.Text, "role admin may") {
		t.Errorf("a role that may not approve: %v", err)
	}
	if err := h.engine.Decide(ctx, code, true, console("admin")); err != nil {
		t.Fatalf("approve as admin: %v", err)
	}
	h.waitFor(group, func(s sent) bool { return strings.HasPrefix(s.Text, "Approved by the console (admin)") })
	res := h.waitFor(group, func(s sent) bool { return strings.Contains(s.Text, "from-console\\n") })
	if res.Req.MessageID != "m1" || res.Req.UserID != "u1" {
		t.Errorf("the result answers %q as %q; want the asking message m1, as the requester u1", res.Req.MessageID, res.Req.UserID)
	}
	h.waitIdle()
	if err := h.engine.Decide(ctx, code, true, console("admin")); !errors.Is(err, policy.ErrAlreadyApproved) {
		t.Errorf("second approve: %v", err)
	}
	if err := h.engine.Decide(ctx, "ZZZZZZ", false, console("admin")); !errors.Is(err, policy.ErrUnknownCode) {
		t.Errorf("unknown code: %v", err)
	}
	runs, audit := 0, ""
	for _, e := range h.entries(group) {
		if e.Role == chat.RoleTool && e.Meta["tool"] == "exec_shell" && e.Meta["outcome"] == "ok" {
			runs++
		}
		if e.Role == chat.RoleUser && e.Meta["approvedBy"] != nil {
			audit = e.Meta["approvedBy"].(string)
		}
	}
	if runs != 1 || audit != "console:admin" {
		t.Errorf("exec_shell ran %d times (want once), approvedBy %q", runs, audit)
	}
}

func TestApprovalRequestShowsBidiControlsEscaped(t *testing.T) {
	h := newHarness(t, harnessOptions{handler: fakeopenai.RunCommands, exec: true, policy: approvalPolicy})
	group := chatKeyOf("-1001")
	done := make(chan ingress.Outcome, 1)
	// A name and a command that would read backwards, and an invisible
	// mark: the request must show each as an escape.
	if _, err := h.engine.Submit(context.Background(), ingress.Submission{
		Channel: testChannel, ChatKey: group,
		Message: ingress.IncomingChatMessage{ChatID: "-1001", Text: "run: echo safe\u202e txt.exe\u2069 \u200fok", MessageID: "m1",
			UserID: "u1", Username: "admin\u202enimda\u061c", ChatType: "supergroup"},
		OnDone: func(o ingress.Outcome) { done <- o },
	}); err != nil {
		t.Fatal(err)
	}
	<-done
	req := h.waitFor(group, func(s sent) bool { return len(s.Buttons) > 0 })
	for _, want := range []string{`admin\u202enimda\u061c wants to run`, `echo safe\u202e txt.exe\u2069 \u200fok`} {
		if !strings.Contains(req.Text, want) {
			t.Errorf("approval request %q does not show %q", req.Text, want)
		}
	}
	if i := strings.IndexAny(req.Text, "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"); i >= 0 {
		t.Errorf("approval request %q has a raw bidi control at byte %d", req.Text, i)
	}
}

// The console's Approve and a chat's /approve are one call (Decide): the
// same approval decided from both, in either order, runs once, and the
// second decider hears it was already approved.
func TestAnApprovalDecidedFromTheConsoleAndTheChatRunsOnce(t *testing.T) {
	for _, consoleFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("consoleFirst=%v", consoleFirst), func(t *testing.T) {
			h := newHarness(t, harnessOptions{handler: fakeopenai.RunCommands, exec: true, policy: approvalPolicy})
			group := chatKeyOf("-1001")
			h.ask("-1001", "m1", "run: echo once-only")
			code := approvalCode(t, h.waitFor(group, func(s sent) bool { return len(s.Buttons) > 0 }))
			ctx := context.Background()
			console := engine.Decider{Identity: "console:admin", Name: "the console (admin)", AsRole: "admin"}
			boss := dispatch.RequestContext{Channel: testChannel, ChatID: "-1001", ChatKey: group, UserID: "boss", ChatType: "supergroup", MessageID: "m2"}
			fromConsole := func() error { return h.engine.Decide(ctx, code, true, console) }
			fromChat := func() string { reply, _ := h.engine.Command(ctx, "approve", code, boss); return reply }
			if consoleFirst {
				if err := fromConsole(); err != nil {
					t.Fatalf("the console's approve: %v", err)
				}
			} else if reply := fromChat(); reply != "" {
				t.Fatalf("the chat's approve: %q", reply)
			}
			h.waitFor(group, func(s sent) bool { return strings.Contains(s.Text, "once-only\\n") })
			h.waitIdle()
			if consoleFirst {
				if reply := fromChat(); !strings.Contains(reply, "already approved") {
					t.Errorf("the chat's approve after the console's: %q", reply)
				}
			} else if err := fromConsole(); !errors.Is(err, policy.ErrAlreadyApproved) {
				t.Errorf("the console's approve after the chat's: %v", err)
			}
			h.waitIdle()
			runs := 0
			for _, e := range h.entries(group) {
				if e.Role == chat.RoleTool && e.Meta["tool"] == "exec_shell" && e.Meta["outcome"] == "ok" {
					runs++
				}
			}
			if runs != 1 {
				t.Errorf("exec_shell ran %d times, want once", runs)
			}
		})
	}
}
