package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/journal"
	"github.com/shipmyagent/ship/runtime/turn"
)

// identityPolicy: only api:ci-bot may run echo, in groups after approval.
const identityPolicy = `{
  "roles": {
    "ci":    {"members": ["api:ci-bot"], "allow": ["exec_shell(echo *)"]},
    "admin": {"members": ["telegram:boss"], "approve": true}
  },
  "chats": {"telegram:chat:-100*": {"requireApproval": ["exec_shell"]}}
}`

func TestAnApprovedCallContinuesAsTheIdentityThatAskedForIt(t *testing.T) {
	h := newHarness(t, harnessOptions{handler: fakeopenai.RunCommands, exec: true, policy: identityPolicy})
	group := chatKeyOf("-1001")
	done := make(chan ingress.Outcome, 1)
	// The run acts as api:ci-bot; its userId u9 is a label with no role.
	if _, err := h.engine.Submit(context.Background(), ingress.Submission{Turn: turn.Turn{Identity: "api:ci-bot"}, Channel: testChannel, ChatKey: group, Message: ingress.IncomingChatMessage{ChatID: "-1001", Text: "run: echo continued", MessageID: "m1", UserID: "u9", ChatType: "supergroup"}, OnDone: func(o ingress.Outcome) { done <- o }}); err != nil {
		t.Fatal(err)
	}
	<-done
	code := approvalCode(t, h.waitFor(group, func(s sent) bool { return len(s.Buttons) > 0 }))
	boss := dispatch.RequestContext{Channel: testChannel, ChatID: "-1001", ChatKey: group, UserID: "boss", ChatType: "supergroup", MessageID: "m2"}
	if reply, _ := h.engine.Command(context.Background(), "approve", code, boss); reply != "" {
		t.Fatalf("approve: %q", reply)
	}
	h.waitFor(group, func(s sent) bool { return strings.Contains(s.Text, "continued\\n") })
	h.waitIdle()
	// The turn after the approved call is still ci-bot's: its tools are
	// offered to the model, not the label u9's (none).
	reqs := h.fake.Requests()
	if last := reqs[len(reqs)-1]; !last.HasTool("exec_shell") {
		t.Error("the turn after the approved call lost api:ci-bot's exec_shell: it ran as the route's userId")
	}
}

func TestAnAPIRunWithoutAnIdentityIsAnonymous(t *testing.T) {
	h := newHarness(t, harnessOptions{handler: fakeopenai.RunCommands, exec: true,
		policy: `{"roles": {"boss": {"members": ["api:boss"], "allow": ["exec_shell"]}}}`})
	var got []string
	h.engine.Register(chat.ChannelAPI, dispatch.DispatcherFunc(func(_ context.Context, _ dispatch.RequestContext, text string) error {
		got = append(got, text)
		return nil
	}))
	done := make(chan ingress.Outcome, 1)
	if _, err := h.engine.Submit(context.Background(), ingress.Submission{
		Channel: chat.ChannelAPI, ChatKey: "api:chat:x",
		Message: ingress.IncomingChatMessage{ChatID: "x", Text: "run: echo hi", MessageID: "m1", UserID: "boss", ChatType: "api"},
		OnDone:  func(o ingress.Outcome) { done <- o },
	}); err != nil {
		t.Fatal(err)
	}
	<-done
	if len(got) != 1 || got[0] != "no shell" {
		t.Errorf(`an api message with userId "boss" and no identity got %q; want no shell`, got)
	}
}

func TestARecoveredRunKeepsItsIdentity(t *testing.T) {
	dir := t.TempDir()
	writeJournal(t, dir, func(j *journal.Journal) {
		it := journalItem("a", "1", "m1", "run: echo recovered")
		it.Route.UserID = "u9" // a label with no role
		it.Identity = "api:ci-bot"
		_ = j.Add(it)
	})
	h := newHarness(t, harnessOptions{dir: dir, journal: true, handler: fakeopenai.RunCommands, exec: true,
		policy: `{"roles": {"ci": {"members": ["api:ci-bot"], "allow": ["exec_shell(echo *)"]}}}`})
	if n := h.engine.Recover(context.Background()); n != 1 {
		t.Fatalf("recovered %d messages, want 1", n)
	}
	h.waitIdle()
	if got := strings.Join(h.out.texts(chatKeyOf("1")), "|"); !strings.Contains(got, "recovered\\n") {
		t.Errorf("the recovered run got %q; want api:ci-bot's shell, not the label's refusal", got)
	}
}
