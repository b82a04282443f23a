package telegram_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf16"

	"github.com/shipmyagent/ship/adapters/markdown"
	"github.com/shipmyagent/ship/adapters/telegram"
	"github.com/shipmyagent/ship/internal/faketelegram"
	"github.com/shipmyagent/ship/runtime/dispatch"
)

// answerHost plays the core's questions: the first "/answer Q n" takes
// the answer, later ones are told who answered, as the core words it.
type answerHost struct {
	commandHost
	mu    sync.Mutex
	taken string
}

func (h *answerHost) Command(ctx context.Context, name, args string, req dispatch.RequestContext) (string, bool) {
	if name != "answer" {
		return h.commandHost.Command(ctx, name, args, req)
	}
	h.commandHost.mu.Lock()
	h.calls = append(h.calls, commandCall{name: name, args: args, req: req})
	h.commandHost.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.taken != "" {
		return "Already answered by @" + h.taken, true
	}
	h.taken = req.Username
	_, n, _ := strings.Cut(args, " ")
	return "Answered: Option " + string(rune('A'-1+int(n[0]-'0'))), true
}

// A question's buttons go one to a row when their labels would not fit
// side by side. The asked person's press answers it: the core's reply is
// the press's answer and the buttons leave the message, so the chat sees
// the question is closed; a second press gets the core's "already
// answered", and nothing else changes.
func TestAnsweredQuestionClosesItsButtons(t *testing.T) {
	h := &answerHost{}
	e := newEnv(t, setup{opts: func(o *telegram.Options) { h.Host = o.Host; o.Host = h }})
	const forum = -100900
	req := topicRequest("-100900", 33, "77")
	var buttons []dispatch.Button
	for i, label := range []string{"Ship it tonight", "Wait for the review", "Cancel the release"} {
		buttons = append(buttons, dispatch.Button{Text: label, Data: fmt.Sprintf("/answer Q7X2 %d", i+1)})
	}
	if err := e.adapter.SendButtons(e.ctx(), req, "**Deploy** v2.3 now?", buttons); err != nil {
		t.Fatal(err)
	}
	s := e.waitSent(1)[0]
	if s.Text != "Deploy v2.3 now?" || s.ThreadID != 33 || len(s.Buttons) != 3 || len(s.Buttons[0]) != 1 ||
		s.Buttons[1][0].CallbackData != "/answer Q7X2 2" {
		t.Fatalf("sent %+v; want the question in bold with three buttons, one per row", s)
	}
	// Eve taps while her app still shows the buttons; her tap arrives
	// after Bob's.
	late, err := e.tg.CallbackQuery(forum, s.MessageID, 8, "eve", "/answer Q7X2 3")
	if err != nil {
		t.Fatal(err)
	}
	if ans := e.press(forum, s.MessageID, 7, "bob", "/answer Q7X2 2"); ans.Text != "Answered: Option B" {
		t.Errorf("press answered %q, want the core's reply", ans.Text)
	}
	if err := e.tg.Wait(e.ctx(), func() bool {
		m, ok := e.tg.Message(forum, s.MessageID)
		return ok && m.Buttons == nil
	}); err != nil {
		t.Fatalf("the answered question keeps its buttons: %v", err)
	}
	e.tg.Push(late)
	ans, err := e.tg.WaitAnswered(e.ctx(), late["callback_query"].(map[string]any)["id"].(string))
	if err != nil || ans.Text != "Already answered by @bob" {
		t.Errorf("second press answered %q (%v)", ans.Text, err)
	}
	e.idle()
	if m, _ := e.tg.Message(forum, s.MessageID); m.Text != "Deploy v2.3 now?" || m.Buttons != nil {
		t.Errorf("question now %+v", m)
	}
	calls := h.Calls()
	if len(calls) != 2 || calls[0].args != "Q7X2 2" || calls[0].req.ChatKey != "telegram:chat:-100900:topic:33" || calls[0].req.UserID != "7" {
		t.Errorf("Host.Command calls %+v", calls)
	}
	if n := len(e.tg.Sent()); n != 1 || e.model.RequestCount() != 0 {
		t.Errorf("presses sent %d messages and asked the model %d times", n-1, e.model.RequestCount())
	}
}

// A reply to an approval press (not a question) leaves the buttons alone,
// an approval request's text goes as written (no Markdown may hide part of
// the call it shows), and two or three short labels share one row.
func TestShortButtonsShareARowAndApprovalsKeepTheirs(t *testing.T) {
	h := &commandHost{}
	e := newEnv(t, setup{opts: withCommandHost(h)})
	req := dispatch.RequestContext{Channel: "telegram", ChatID: "42", ChatType: "private", ChatKey: "telegram:chat:42"}
	yesNo := []dispatch.Button{{Text: "Yes", Data: "/answer Q1 1"}, {Text: "No", Data: "/answer Q1 2"}, {Text: "Later", Data: "/answer Q1 3"}}
	if err := e.adapter.SendButtons(e.ctx(), req, "Go?", yesNo); err != nil {
		t.Fatal(err)
	}
	if err := e.adapter.SendButtons(e.ctx(), req, "Run `rm *.tmp *.log`? [docs](https://x.example)", approvalButtons("KEEP01")); err != nil {
		t.Fatal(err)
	}
	sent := e.waitSent(2)
	if len(sent[0].Buttons) != 1 || len(sent[0].Buttons[0]) != 3 {
		t.Errorf("buttons %+v, want one row of three", sent[0].Buttons)
	}
	if sent[1].Text != "Run `rm *.tmp *.log`? [docs](https://x.example)" || sent[1].Params["entities"] != "" {
		t.Errorf("approval request sent as %q with entities %s; want it as written", sent[1].Text, sent[1].Params["entities"])
	}
	if ans := e.press(42, sent[1].MessageID, 42, "ann", "/approve KEEP01"); !strings.HasPrefix(ans.Text, "Approved") {
		t.Errorf("answer %q", ans.Text)
	}
	e.idle()
	if m, _ := e.tg.Message(42, sent[1].MessageID); m.Buttons == nil || len(e.tg.Edits()) != 0 {
		t.Errorf("an approval press changed the message: %+v, edits %+v", m, e.tg.Edits())
	}
}

// Text with buttons over 4,096 characters is cut short with "…" and its
// entities cut with it, valid for Telegram.
func TestLongButtonTextKeepsItsEntitiesValid(t *testing.T) {
	e := newEnv(t, setup{})
	req := dispatch.RequestContext{Channel: "telegram", ChatID: "42", ChatType: "private", ChatKey: "telegram:chat:42"}
	text := "**" + strings.TrimSpace(strings.Repeat("Bold 😀 words. ", 400)) + "**"
	buttons := []dispatch.Button{{Text: "Yes", Data: "/answer LONG02 1"}, {Text: "No", Data: "/answer LONG02 2"}}
	if err := e.adapter.SendButtons(e.ctx(), req, text, buttons); err != nil {
		t.Fatal(err)
	}
	s := e.waitSent(1)[0]
	var ents []markdown.Entity
	if err := unmarshalEntities(s.Params["entities"], &ents); err != nil || len(ents) != 1 || ents[0].Type != "bold" {
		t.Fatalf("entities %s: %v", s.Params["entities"], err)
	}
	if err := markdown.Check(s.Text, ents); err != nil {
		t.Errorf("cut text's entities: %v", err)
	}
	if n := utf16Units(s.Text); n > telegram.MaxMessageChars || !strings.HasSuffix(s.Text, "…") || !slices.Equal(s.Buttons[0], []faketelegram.Button{
		{Text: "Yes", CallbackData: "/answer LONG02 1"}, {Text: "No", CallbackData: "/answer LONG02 2"}}) {
		t.Errorf("sent %d units ending %q with buttons %+v", n, s.Text[len(s.Text)-8:], s.Buttons)
	}
	if n := utf16Units(s.Text); n < 4000 {
		t.Errorf("cut to %d UTF-16 units; want close to the limit", n)
	}
}

func unmarshalEntities(raw string, ents *[]markdown.Entity) error {
	return json.Unmarshal([]byte(raw), ents)
}

// utf16Units is the length of s as Telegram counts it.
func utf16Units(s string) int { return len(utf16.Encode([]rune(s))) }
