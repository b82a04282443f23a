package engine_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/questions"
)

// asker is a model that asks "Deploy where?" with three choices when told
// "deploy", and otherwise repeats what it was told; it records every
// message it was asked to answer.
type asker struct {
	mu   sync.Mutex
	seen []string
}

func (a *asker) handle(r fakeopenai.Request) fakeopenai.Response {
	if len(r.ToolResults()) > 0 {
		return fakeopenai.Response{}
	}
	a.mu.Lock()
	a.seen = append(a.seen, r.LastUser())
	a.mu.Unlock()
	if strings.Contains(r.LastUser(), "deploy") {
		return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{call("chat_ask", map[string]any{
			"question": "Deploy **where**?", "choices": []string{"staging", "production", "nowhere"},
		})}}
	}
	return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{call("chat_send", map[string]string{"text": "heard: " + r.LastUser()})}}
}

func (a *asker) turns() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.seen...)
}

// A question goes out with one button per choice; the asked person's tap
// is one new turn in the chat, which the model sees as the answer; a
// second tap, or anyone else's, starts nothing and says why.
func TestATapAnswersAQuestionOnce(t *testing.T) {
	a := &asker{}
	h := newHarness(t, harnessOptions{show: true, handler: a.handle})
	h.ask("7", "m1", "please deploy")
	var q sent
	for _, m := range h.out.all() {
		if len(m.Buttons) > 0 {
			q = m
		}
	}
	if q.Text != "Deploy **where**?" || len(q.Buttons) != 3 || q.Buttons[1].Text != "production" {
		t.Fatalf("question shown as %+v", q)
	}
	id := strings.Fields(q.Buttons[1].Data)[1]
	if q.Buttons[1].Data != dispatch.AnswerData(id, 2) {
		t.Fatalf("button data %q", q.Buttons[1].Data)
	}
	ctx := context.Background()
	presser := dispatch.RequestContext{Channel: testChannel, ChatID: "7", ChatKey: chatKeyOf("7"), UserID: "u2", Username: "@mallory", MessageID: "q1"}
	if reply, _ := h.engine.Command(ctx, "answer", id+" 3", presser); reply != "This question is for someone else." {
		t.Fatalf("another member's tap: %q", reply)
	}
	asked := presser
	asked.UserID, asked.Username = "u1", "@al"
	if reply, _ := h.engine.Command(ctx, "answer", id+" 2", asked); reply != "Answered: production" {
		t.Fatalf("the asked person's tap: %q", reply)
	}
	if reply, _ := h.engine.Command(ctx, "answer", id+" 1", asked); reply != "Already answered by @al: production." {
		t.Fatalf("a second tap: %q", reply)
	}
	h.waitIdle()
	turns := a.turns()
	if len(turns) != 2 || !strings.Contains(turns[1], "answered your question "+id) || !strings.Contains(turns[1], "2. production") {
		t.Fatalf("the model was asked %q; want the request and one answer", turns)
	}
	var answers int
	for _, e := range h.entries(chatKeyOf("7")) {
		if e.Role == chat.RoleUser && e.Meta["questionId"] == id {
			answers++
		}
	}
	if answers != 1 {
		t.Fatalf("%d answer entries in the log, want 1", answers)
	}
}

// Where the platform shows no buttons, the question goes as a numbered
// list, and the asked person's message "2" is the answer: once. The next
// "2" is just a message.
func TestANumberTypedAnswersWhereThereAreNoButtons(t *testing.T) {
	a := &asker{}
	h := newHarness(t, harnessOptions{show: true, handler: a.handle})
	var mu sync.Mutex
	var shown []string
	h.engine.Register("qq", dispatch.DispatcherFunc(func(_ context.Context, _ dispatch.RequestContext, text string) error {
		mu.Lock()
		defer mu.Unlock()
		shown = append(shown, text)
		return nil
	}))
	say := func(msgID, user, text string) {
		done := make(chan ingress.Outcome, 1)
		if _, err := h.engine.Submit(context.Background(), ingress.Submission{
			Channel: "qq", ChatKey: "qq:group:g1",
			Message: ingress.IncomingChatMessage{ChatID: "g1", ChatType: "group", Text: text, MessageID: msgID, UserID: user},
			OnDone:  func(o ingress.Outcome) { done <- o },
		}); err != nil {
			t.Fatal(err)
		}
		<-done
	}
	say("m1", "u1", "deploy now")
	mu.Lock()
	list := shown[0]
	mu.Unlock()
	if !strings.Contains(list, "1. staging\n2. production\n3. nowhere") || !strings.Contains(list, "Reply with the number") {
		t.Fatalf("question shown as %q", list)
	}
	say("m2", "u9", "2") // not the person asked
	say("m3", "u1", "2")
	say("m4", "u1", "2")
	turns := a.turns()
	if len(turns) != 4 || turns[1] != "2" || !strings.Contains(turns[2], "2. production") || turns[3] != "2" {
		t.Fatalf("the model saw %q", turns)
	}
}

// An expired question takes no answer and says when it expired; an
// unknown one says so too.
func TestAnExpiredQuestionSaysSo(t *testing.T) {
	a := &asker{}
	var mu sync.Mutex
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	h := newHarness(t, harnessOptions{show: true, handler: a.handle, now: clock})
	h.ask("7", "m1", "please deploy")
	id := strings.Fields(h.out.all()[0].Buttons[0].Data)[1]
	mu.Lock()
	now = now.Add(questions.DefaultTTL)
	mu.Unlock()
	asked := dispatch.RequestContext{Channel: testChannel, ChatID: "7", ChatKey: chatKeyOf("7"), UserID: "u1"}
	if reply, _ := h.engine.Command(context.Background(), "answer", id+" 1", asked); reply != "This question expired at Nov 27 12:00 UTC; nothing was answered. Ask again if it still matters." {
		t.Fatalf("a tap after 24 h: %q", reply)
	}
	if reply, _ := h.engine.Command(context.Background(), "answer", "ZZZZZZ 1", asked); !strings.Contains(reply, "no such question") {
		t.Fatalf("unknown question: %q", reply)
	}
	if _, err := h.engine.Answer(context.Background(), "ZZZZZZ", 1, questions.Answerer{Identity: "console:ops"}); err == nil {
		t.Fatal("the console answered an unknown question")
	}
	h.waitIdle()
	if turns := a.turns(); len(turns) != 1 {
		t.Fatalf("the model was asked %q; want only the first message", turns)
	}
}
