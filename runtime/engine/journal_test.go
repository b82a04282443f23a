package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/events"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/journal"
	"github.com/shipmyagent/ship/runtime/turn"
)

func journalItem(id, chatID, msgID, text string) journal.Item {
	key := chatKeyOf(chatID)
	return journal.Item{Turn: turn.Turn{ID: id, ChatKey: key, Text: text, Route: dispatch.RequestContext{Channel: testChannel, ChatID: chatID, ChatKey: key, MessageID: msgID, ChatType: "private"}}}
}

// writeJournal leaves a journal as a crashed process would.
func writeJournal(t *testing.T, dir string, steps func(j *journal.Journal)) {
	t.Helper()
	j, _, err := journal.Open(filepath.Join(dir, ".ship", "pending.jsonl"), true)
	if err != nil {
		t.Fatal(err)
	}
	steps(j)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestRecoveryAnswersInterruptedMessagesOnce(t *testing.T) {
	dir := t.TempDir()
	writeJournal(t, dir, func(j *journal.Journal) {
		// Accepted, never started (crash right after the platform's ack).
		_ = j.Add(journalItem("a", "1", "m1", "accepted, then the crash"))
		// Started, interrupted before replying.
		_ = j.Add(journalItem("b", "2", "m2", "interrupted mid-run"))
		_ = j.Start("b")
		// Started and about to reply: the reply may have gone out.
		_ = j.Add(journalItem("c", "3", "m3", "was replying"))
		_ = j.Start("c")
		_ = j.Sending("c")
		// Crashed ship three times in a row.
		_ = j.Add(journalItem("d", "4", "m4", "poison"))
		for i := 0; i < 3; i++ {
			_ = j.Start("d")
		}
		// Finished: nothing to do.
		_ = j.Add(journalItem("e", "5", "m5", "finished"))
		_ = j.Done("e")
	})
	// A crash mid-write leaves half a line.
	f, _ := os.OpenFile(filepath.Join(dir, ".ship", "pending.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"op":"add","id":"torn","item":{"chatK`)
	f.Close()

	h := newHarness(t, harnessOptions{dir: dir, journal: true})
	if n := h.engine.Recover(context.Background()); n != 2 {
		t.Fatalf("recovered %d messages into the queue, want 2 (a and b)", n)
	}
	h.waitIdle()
	got := strings.Join(h.out.texts(""), "|")
	if !strings.Contains(got, "echo: accepted, then the crash") || !strings.Contains(got, "echo: interrupted mid-run") || len(h.out.all()) != 2 {
		t.Errorf("replies after recovery: %q", got)
	}
	// The message that may have been answered is not answered again, and
	// the poison message is marked failed where a user and an operator see it.
	for _, k := range []string{"3"} {
		if len(h.out.texts(chatKeyOf(k))) != 0 {
			t.Errorf("chat %s answered again", k)
		}
	}
	failed := false
	for _, e := range h.entries(chatKeyOf("4")) {
		failed = failed || (e.Role == chat.RoleSystem && strings.Contains(e.Text, "failed after 3 interrupted runs"))
	}
	if !failed || !strings.Contains(h.logs.String(), "marked failed") {
		t.Error("the poison message is not marked failed in the chat log and the process log")
	}
	// The lost log entry of "a" was restored from the journal.
	es := h.entries(chatKeyOf("1"))
	if len(es) != 2 || es[0].Text != "accepted, then the crash" || es[0].MessageID != "m1" {
		t.Errorf("chat 1 log = %s", roles(es))
	}
	if n := engine.JournalPending(h.engine); n != 0 {
		t.Errorf("%d items still pending after recovery", n)
	}
	// Telegram re-delivering a recovered message does not run it twice.
	_, err := h.engine.Submit(context.Background(), ingress.Submission{Once: true, Channel: testChannel, ChatKey: chatKeyOf("2"),
		Message: ingress.IncomingChatMessage{ChatID: "2", MessageID: "m2", Text: "interrupted mid-run"}})
	if err != ingress.ErrDuplicate {
		t.Errorf("re-delivery after recovery: %v, want ErrDuplicate", err)
	}
}

func TestJournaledTurnLeavesNothingPending(t *testing.T) {
	h := newHarness(t, harnessOptions{journal: true})
	h.ask("9", "m1", "hello")
	if n := engine.JournalPending(h.engine); n != 0 {
		t.Errorf("%d items pending after a finished turn", n)
	}
	// The log entry is there although only the journal was fsynced.
	if es := h.entries(chatKeyOf("9")); len(es) != 2 {
		t.Errorf("log = %s", roles(es))
	}
}

func TestFloodingUserIsLoggedButNotAnswered(t *testing.T) {
	h := newHarness(t, harnessOptions{userLimit: ingress.UserLimiterOptions{Burst: 2}})
	sub, _ := h.engine.Subscribe(func(e events.Event) bool { return e.Type == events.TypeError }, 0, 16)
	defer sub.Close()
	ctx := context.Background()
	var limited int
	for i := 0; i < 5; i++ {
		// The platforms' door (adapters.Host): a refused message is kept
		// in the log with its refusal.
		_, err := h.engine.Accept(ctx, ingress.Submission{Channel: testChannel, ChatKey: chatKeyOf("g"),
			Message: ingress.IncomingChatMessage{ChatID: "g", MessageID: fmt.Sprint("spam", i), UserID: "spammer", Text: fmt.Sprint("spam ", i)}})
		var rl *ingress.RateLimitedError
		switch {
		case errors.As(err, &rl) && rl.RetryAfter > 0:
			limited++
		case err != nil:
			t.Fatal(err)
		}
	}
	// Another member of the same chat is not held back by the spammer.
	if _, err := h.engine.Accept(ctx, ingress.Submission{Channel: testChannel, ChatKey: chatKeyOf("g"),
		Message: ingress.IncomingChatMessage{ChatID: "g", MessageID: "ok", UserID: "member", Text: "a real question"}}); err != nil {
		t.Fatalf("the other member was limited: %v", err)
	}
	h.waitIdle()
	if limited != 3 || len(h.out.all()) != 3 {
		t.Errorf("limited %d (want 3), answered %d (want 2 of the spammer's + 1)", limited, len(h.out.all()))
	}
	users, refusals := 0, 0
	for _, e := range h.entries(chatKeyOf("g")) {
		switch {
		case e.Role == chat.RoleUser:
			users++
		case e.Role == chat.RoleSystem && strings.Contains(e.Text, "rate limit"):
			refusals++
		}
	}
	if users != 6 || refusals != 3 {
		t.Errorf("%d user entries and %d refusals logged, want all 6 and 3 refusals next to them", users, refusals)
	}
	// Each refusal is visible on the event stream.
	for i := 0; i < 3; i++ {
		if e := <-sub.C; e.ErrorCode != "RATE_LIMITED" || e.ChatKey != chatKeyOf("g") || !strings.HasPrefix(e.UserMessageID, "spam") {
			t.Errorf("refusal event %d = %+v", i, e)
		}
	}
	// A re-delivery of a refused message is a duplicate: it was kept.
	if _, err := h.engine.Accept(ctx, ingress.Submission{Channel: testChannel, ChatKey: chatKeyOf("g"),
		Message: ingress.IncomingChatMessage{ChatID: "g", MessageID: "spam4", UserID: "spammer", Text: "spam 4"}}); !errors.Is(err, ingress.ErrDuplicate) {
		t.Errorf("a re-delivered refused message: %v, want a duplicate", err)
	}
}

func TestOverlongPlatformTextIsCutAndSaysSo(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	long := strings.Repeat("é", ingress.MaxMessageChars+500)
	done := make(chan ingress.Outcome, 1)
	if _, err := h.engine.Submit(context.Background(), ingress.Submission{Once: true, Channel: testChannel, ChatKey: chatKeyOf("l"),
		Message: ingress.IncomingChatMessage{ChatID: "l", MessageID: "1", Text: long}, OnDone: func(o ingress.Outcome) { done <- o }}); err != nil {
		t.Fatal(err)
	}
	<-done
	got := h.fake.Requests()[0].LastUser()
	if !strings.HasPrefix(got, strings.Repeat("é", ingress.MaxMessageChars)) || !strings.Contains(got, "cut at 10000 characters") {
		t.Errorf("model saw %d bytes ending %q", len(got), got[len(got)-60:])
	}
}

// Whoever hears a journaled run's outcome must find the journal settled:
// a caller acting on OnDone (a restart, a test) must not see it pending.
func TestJournalIsSettledBeforeTheOutcomeIsReported(t *testing.T) {
	h := newHarness(t, harnessOptions{journal: true})
	pendingAtDone := make(chan int, 1)
	_, err := h.engine.Submit(context.Background(), ingress.Submission{Once: true, Channel: testChannel, ChatKey: chatKeyOf("5"),
		Message: ingress.IncomingChatMessage{ChatID: "5", MessageID: "m1", Text: "hello"},
		OnDone:  func(ingress.Outcome) { pendingAtDone <- engine.JournalPending(h.engine) }})
	if err != nil {
		t.Fatal(err)
	}
	if n := <-pendingAtDone; n != 0 {
		t.Fatalf("%d journal items pending when OnDone ran, want 0", n)
	}
}

// A run that shutdown cuts short is answered at the next start: it must
// not count as answered because the fallback tried to reply on the way out.
func TestRunStoppedByShutdownRunsAgain(t *testing.T) {
	dir := t.TempDir()
	release := make(chan struct{})
	defer close(release)
	entered := make(chan struct{}, 1)
	h := newHarness(t, harnessOptions{dir: dir, journal: true, handler: func(r fakeopenai.Request) fakeopenai.Response {
		if r.LastUser() == "long job" {
			select {
			case entered <- struct{}{}:
			default:
			}
			<-release
		}
		return fakeopenai.EchoChatSend(r)
	}})
	h.send("1", "j1", "long job")
	<-entered
	stop, cancel := context.WithCancel(context.Background())
	cancel()
	_, _ = h.engine.Close(stop)
	if got := h.out.texts(chatKeyOf("1")); len(got) != 0 {
		t.Fatalf("replies while stopping: %q", got)
	}

	h2 := newHarness(t, harnessOptions{dir: dir, journal: true})
	if n := h2.engine.Recover(context.Background()); n != 1 {
		t.Fatalf("recovered %d messages, want the interrupted one", n)
	}
	h2.waitIdle()
	if got := h2.out.texts(chatKeyOf("1")); len(got) != 1 || got[0] != "echo: long job" {
		t.Errorf("replies after the restart: %q, want the one answer", got)
	}
}
