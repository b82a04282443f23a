package telegram_test

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/adapters/telegram"
	"github.com/shipmyagent/ship/internal/faketelegram"
	"github.com/shipmyagent/ship/runtime/dispatch"
)

// commandCall is one Host.Command call.
type commandCall struct {
	name, args string
	req        dispatch.RequestContext
}

// commandHost is the engine with the approval commands answered here: the
// adapter's side of the contract is what a press reaches Host.Command with,
// whatever the core then does with it. Other commands go to the engine.
type commandHost struct {
	adapters.Host

	mu    sync.Mutex
	calls []commandCall
}

func (h *commandHost) Command(ctx context.Context, name, args string, req dispatch.RequestContext) (string, bool) {
	h.mu.Lock()
	h.calls = append(h.calls, commandCall{name: name, args: args, req: req})
	h.mu.Unlock()
	switch name {
	case "approve":
		return "Approved " + args + " (" + req.Username + ").", true
	case "deny":
		return strings.Repeat("Denied. ", 40), true // over answerCallbackQuery's 200 characters
	}
	return h.Host.Command(ctx, name, args, req)
}

func (h *commandHost) Calls() []commandCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.calls)
}

// withCommandHost puts a commandHost in front of the engine.
func withCommandHost(h *commandHost, more ...func(*telegram.Options)) func(*telegram.Options) {
	return func(o *telegram.Options) {
		h.Host = o.Host
		o.Host = h
		for _, f := range more {
			f(o)
		}
	}
}

func approvalButtons(code string) []dispatch.Button {
	return []dispatch.Button{{Text: "Approve", Data: "/approve " + code}, {Text: "Deny", Data: "/deny " + code}}
}

// topicRequest is the request of a message in forum topic thread of chat.
func topicRequest(chatID string, thread int64, messageID string) dispatch.RequestContext {
	return dispatch.RequestContext{
		Channel: "telegram", ChatID: chatID, ChatType: "supergroup", MessageThreadID: thread, MessageID: messageID,
		ChatKey: "telegram:chat:" + chatID + ":topic:" + strconv.FormatInt(thread, 10), UserID: "7", Username: "bob",
	}
}

// press presses a button and waits for the adapter's answer to it.
func (e *env) press(chatID, messageID, userID int64, username, data string) faketelegram.Answer {
	e.t.Helper()
	id, err := e.tg.Press(chatID, messageID, userID, username, data)
	if err != nil {
		e.t.Fatal(err)
	}
	ans, err := e.tg.WaitAnswered(e.ctx(), id)
	if err != nil {
		e.t.Fatalf("press %q on message %d: no answer: %v", data, messageID, err)
	}
	return ans
}

// Buttons land in the topic they are meant for, as a reply to the message
// that asked; a press runs the command its data spells for the topic of the
// message it is under, and its reply is the press's answer. A press is
// neither logged nor queued, and asks the model nothing.
func TestButtonsGoToTheirTopicAndPressesRunCommandsThere(t *testing.T) {
	h := &commandHost{}
	e := newEnv(t, setup{opts: withCommandHost(h)})
	const forum = -100500
	for i, topic := range []struct {
		thread  int64
		trigger string
		code    string
	}{{11, "301", "7KQ2MX"}, {22, "302", "9ZZ4AB"}} {
		req := topicRequest("-100500", topic.thread, topic.trigger)
		if err := e.adapter.SendButtons(e.ctx(), req, "Run `rm -rf build`?", approvalButtons(topic.code)); err != nil {
			t.Fatal(err)
		}
		s := e.waitSent(i + 1)[i]
		want := [][]faketelegram.Button{{
			{Text: "Approve", CallbackData: "/approve " + topic.code},
			{Text: "Deny", CallbackData: "/deny " + topic.code},
		}}
		// An approval request shows the call as written: no Markdown can
		// hide part of it.
		if s.ChatID != forum || s.ThreadID != topic.thread || s.ReplyTo != 301+int64(i) || s.Text != "Run `rm -rf build`?" ||
			s.Params["entities"] != "" ||
			!slices.EqualFunc(s.Buttons, want, slices.Equal) {
			t.Fatalf("sent %+v; want the question with buttons %v in topic %d, a reply to %s", s, want, topic.thread, topic.trigger)
		}
	}
	sent := e.tg.Sent()
	// Pressed in the other order, so each chatKey comes from the message
	// pressed, not from what was sent last.
	ans := e.press(forum, sent[1].MessageID, 8, "eve", "/approve 9ZZ4AB")
	if ans.Text != "Approved 9ZZ4AB (eve)." || ans.ShowAlert {
		t.Errorf("answer %+v", ans)
	}
	ans = e.press(forum, sent[0].MessageID, 7, "bob", "/deny 7KQ2MX")
	if n := utf8.RuneCountInString(ans.Text); n != 200 || !strings.HasSuffix(ans.Text, "…") || !strings.HasPrefix(ans.Text, "Denied.") {
		t.Errorf("answer of %d characters %q, want the reply cut to 200 with …", n, ans.Text)
	}
	calls := h.Calls()
	wantCalls := []commandCall{
		{name: "approve", args: "9ZZ4AB", req: dispatch.RequestContext{Channel: "telegram", ChatID: "-100500",
			ChatType: "supergroup", MessageThreadID: 22, ChatKey: "telegram:chat:-100500:topic:22", UserID: "8",
			Username: "eve", MessageID: strconv.FormatInt(sent[1].MessageID, 10)}},
		{name: "deny", args: "7KQ2MX", req: dispatch.RequestContext{Channel: "telegram", ChatID: "-100500",
			ChatType: "supergroup", MessageThreadID: 11, ChatKey: "telegram:chat:-100500:topic:11", UserID: "7",
			Username: "bob", MessageID: strconv.FormatInt(sent[0].MessageID, 10)}},
	}
	if !slices.Equal(calls, wantCalls) {
		t.Errorf("Host.Command calls\n %+v\nwant\n %+v", calls, wantCalls)
	}
	if n := len(e.tg.Answers()); n != 2 {
		t.Errorf("%d answers to 2 presses", n)
	}
	e.idle()
	for _, key := range []string{"telegram:chat:-100500:topic:11", "telegram:chat:-100500:topic:22", "telegram:chat:-100500"} {
		if es := e.entries(key); len(es) != 0 {
			t.Errorf("%s logged %+v; presses are not chat messages", key, es)
		}
	}
	if n := e.model.RequestCount(); n != 0 || len(e.tg.Sent()) != 2 {
		t.Errorf("a press asked the model (%d calls) or sent a message (%d sent)", n, len(e.tg.Sent()))
	}
}

// A press in a private chat runs the command for that chat; data that is
// no command of the core's (Host.Command says no) is answered with nothing.
func TestPrivateChatPressAndUnknownCommand(t *testing.T) {
	h := &commandHost{}
	e := newEnv(t, setup{opts: withCommandHost(h)})
	req := dispatch.RequestContext{Channel: "telegram", ChatID: "42", ChatType: "private", ChatKey: "telegram:chat:42", MessageID: "5"}
	buttons := append(approvalButtons("AAAAAA"), dispatch.Button{Text: "Other", Data: "/frobnicate now"})
	if err := e.adapter.SendButtons(e.ctx(), req, "Allow it?", buttons); err != nil {
		t.Fatal(err)
	}
	s := e.waitSent(1)[0]
	if s.ChatID != 42 || s.ThreadID != 0 || s.ReplyTo != 0 || len(s.Buttons) != 1 || len(s.Buttons[0]) != 3 {
		t.Fatalf("sent %+v, want one row of three buttons in chat 42, not a reply", s)
	}
	if ans := e.press(42, s.MessageID, 42, "", "/frobnicate now"); ans.Text != "" {
		t.Errorf("unknown command answered %q, want nothing", ans.Text)
	}
	ans := e.press(42, s.MessageID, 42, "", "/approve AAAAAA")
	if ans.Text != "Approved AAAAAA (User 42)." {
		t.Errorf("answer %q", ans.Text)
	}
	calls := h.Calls()
	if len(calls) != 2 || calls[0].name != "frobnicate" || calls[0].args != "now" ||
		calls[1].req.ChatKey != "telegram:chat:42" || calls[1].req.MessageThreadID != 0 || calls[1].req.UserID != "42" {
		t.Errorf("Host.Command calls %+v", calls)
	}
}

// A press by someone outside allowedUserIds runs nothing (it is still
// answered, so their button stops spinning); an allowed user's press runs.
func TestPressOutsideTheAllowlistRunsNoCommand(t *testing.T) {
	h := &commandHost{}
	e := newEnv(t, setup{opts: withCommandHost(h, func(o *telegram.Options) { o.AllowedUserIDs = []int64{7} })})
	req := dispatch.RequestContext{Channel: "telegram", ChatID: "-1001", ChatType: "supergroup", ChatKey: "telegram:chat:-1001", MessageID: "9"}
	if err := e.adapter.SendButtons(e.ctx(), req, "Allow it?", approvalButtons("QQQQQQ")); err != nil {
		t.Fatal(err)
	}
	s := e.waitSent(1)[0]
	if ans := e.press(-1001, s.MessageID, 8, "stranger", "/approve QQQQQQ"); ans.Text != "" {
		t.Errorf("stranger's press answered %q", ans.Text)
	}
	if calls := h.Calls(); len(calls) != 0 {
		t.Fatalf("a stranger's press reached Host.Command: %+v", calls)
	}
	if ans := e.press(-1001, s.MessageID, 7, "bob", "/approve QQQQQQ"); ans.Text != "Approved QQQQQQ (bob)." {
		t.Errorf("allowed press answered %q", ans.Text)
	}
	if calls := h.Calls(); len(calls) != 1 || calls[0].req.UserID != "7" || calls[0].req.ChatKey != "telegram:chat:-1001" {
		t.Errorf("Host.Command calls %+v", calls)
	}
}

// A press whose message Telegram no longer shows the bot (an inaccessible
// message has date 0) is told the button no longer works.
func TestPressOnAnInaccessibleMessage(t *testing.T) {
	h := &commandHost{}
	e := newEnv(t, setup{opts: withCommandHost(h)})
	req := dispatch.RequestContext{Channel: "telegram", ChatID: "42", ChatType: "private", ChatKey: "telegram:chat:42"}
	if err := e.adapter.SendButtons(e.ctx(), req, "Allow it?", approvalButtons("OLDOLD")); err != nil {
		t.Fatal(err)
	}
	s := e.waitSent(1)[0]
	u, err := e.tg.CallbackQuery(42, s.MessageID, 42, "ann", "/approve OLDOLD")
	if err != nil {
		t.Fatal(err)
	}
	cq := u["callback_query"].(map[string]any)
	cq["message"] = map[string]any{"chat": map[string]any{"id": 42, "type": "private"}, "message_id": s.MessageID, "date": 0}
	e.tg.Push(u)
	ans, err := e.tg.WaitAnswered(e.ctx(), cq["id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if ans.Text != "This button no longer works." {
		t.Errorf("answer %q", ans.Text)
	}
	if calls := h.Calls(); len(calls) != 0 {
		t.Errorf("Host.Command calls %+v", calls)
	}
}

// Webhook mode asks for presses too, and answers them.
func TestWebhookPressRunsTheCommand(t *testing.T) {
	h := &commandHost{}
	srv, route := newWebhookServer(t)
	e := newEnv(t, setup{mode: telegram.ModeWebhook, noStart: true, opts: withCommandHost(h, func(o *telegram.Options) {
		o.WebhookSecret = "s3cret-s3cret"
		o.WebhookURL = srv.URL
	})})
	route(e.adapter)
	e.start()
	waitWebhook(t, e.tg)
	if list, sent := e.tg.AllowedUpdates(); !sent || !slices.Equal(list, []string{"message", "callback_query"}) {
		t.Errorf("setWebhook asked for %q (sent %v), want [message callback_query]", list, sent)
	}
	req := topicRequest("-100700", 5, "40")
	if err := e.adapter.SendButtons(e.ctx(), req, "Allow it?", approvalButtons("WEBHK1")); err != nil {
		t.Fatal(err)
	}
	s := e.waitSent(1)[0]
	u, err := e.tg.CallbackQuery(-100700, s.MessageID, 7, "bob", "/approve WEBHK1")
	if err != nil {
		t.Fatal(err)
	}
	if status, err := e.tg.DeliverWebhook(e.ctx(), u); err != nil || status != http.StatusOK {
		t.Fatalf("delivering the press: %d %v", status, err)
	}
	ans, err := e.tg.WaitAnswered(e.ctx(), u["callback_query"].(map[string]any)["id"].(string))
	if err != nil || ans.Text != "Approved WEBHK1 (bob)." {
		t.Fatalf("answer %+v, %v", ans, err)
	}
	if calls := h.Calls(); len(calls) != 1 || calls[0].req.ChatKey != "telegram:chat:-100700:topic:5" {
		t.Errorf("Host.Command calls %+v", calls)
	}
}

// Button data over Telegram's 64 bytes is refused before anything is sent;
// a text over 4096 characters is cut short, never split from its buttons.
func TestSendButtonsLimits(t *testing.T) {
	e := newEnv(t, setup{})
	req := dispatch.RequestContext{Channel: "telegram", ChatID: "42", ChatType: "private", ChatKey: "telegram:chat:42"}
	long := []dispatch.Button{{Text: "Approve", Data: "/approve " + strings.Repeat("X", 60)}}
	err := e.adapter.SendButtons(e.ctx(), req, "Allow it?", long)
	if err == nil || !strings.Contains(err.Error(), "64") {
		t.Errorf("68-byte data: err = %v, want one naming the 64-byte limit", err)
	}
	if n := e.tg.Calls("sendMessage"); n != 0 {
		t.Errorf("sendMessage called %d times for refused buttons", n)
	}
	text := strings.Repeat("ä", 5000)
	if err := e.adapter.SendButtons(e.ctx(), req, text, approvalButtons("LONG01")); err != nil {
		t.Fatal(err)
	}
	s := e.waitSent(1)[0]
	if n := utf8.RuneCountInString(s.Text); n != telegram.MaxMessageChars || !strings.HasSuffix(s.Text, "…") || len(s.Buttons) != 1 {
		t.Errorf("sent %d characters (suffix %q) with %d rows of buttons; want 4096 ending in … and the buttons",
			n, s.Text[len(s.Text)-6:], len(s.Buttons))
	}
}
