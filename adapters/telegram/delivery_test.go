package telegram_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/internal/adaptertest"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/faketelegram"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/events"
)

// blocked is Telegram's answer to every message for a user who blocked
// the bot.
var blocked = faketelegram.Failure{ErrorCode: 403, Description: "Forbidden: bot was blocked by the user"}

// runEvents collects the events of the next run in chatKey, up to the one
// that ends it (task_completed or error), while push starts it.
func (e *env) runEvents(chatKey string, push func()) []events.Event {
	e.t.Helper()
	sub, _ := e.engine.Subscribe(func(ev events.Event) bool { return ev.ChatKey == chatKey }, 0, 1024)
	defer sub.Close()
	push()
	return adaptertest.RunEvents(e.t, sub)
}

// undelivered returns the chat log's entries marked as a reply that did
// not reach the user.
func undelivered(es []chat.ChatLogEntryV1) []chat.ChatLogEntryV1 {
	var out []chat.ChatLogEntryV1
	for _, en := range es {
		if en.Meta["delivery"] == "failed" {
			out = append(out, en)
		}
	}
	return out
}

func TestABlockedBotsReplyEndsTheRunAsNotDelivered(t *testing.T) {
	e := newEnv(t, setup{})
	e.tg.FailAlways("sendMessage", 0, blocked)
	evs := e.runEvents("telegram:chat:9", func() { e.tg.Push(e.tg.PrivateText(9, "ann", "hi")) })

	fin := evs[len(evs)-1]
	if fin.Type != events.TypeError || fin.ErrorCode != "DELIVERY_FAILED" ||
		fin.ErrorMessage != "reply not delivered: telegram refused the message (403): Forbidden: bot was blocked by the user" {
		t.Errorf("the run ended with %+v, want an error event DELIVERY_FAILED with Telegram's reason", fin)
	}
	for _, ev := range evs {
		if ev.Type == events.TypeTaskCompleted {
			t.Error("task_completed for a reply nobody got")
		}
	}
	if n := len(e.tg.Sent()); n != 0 {
		t.Errorf("%d messages delivered to a chat that refuses them all", n)
	}
	es := e.entries("telegram:chat:9")
	marked := undelivered(es)
	if len(marked) != 1 || marked[0].Role != chat.RoleSystem || !strings.Contains(marked[0].Text, "reply not delivered") ||
		!strings.Contains(marked[0].Meta["reason"].(string), "bot was blocked by the user") {
		t.Fatalf("chat log entries marked undelivered: %+v, want one system entry with Telegram's reason", marked)
	}
	for _, en := range es {
		if en.Role == chat.RoleAssistant {
			t.Errorf("a refused reply is logged as delivered: %q", en.Text)
		}
	}
	// The model heard it too, from chat_send.
	if res := e.model.Requests()[1].ToolResults(); len(res) != 1 || !strings.Contains(res[0].Content, "blocked") {
		t.Errorf("chat_send told the model %+v, want the platform's refusal", res)
	}
}

func TestAPartlyDeliveredReplySaysWhichPartFailed(t *testing.T) {
	// Three paragraphs of 3,000 characters: three messages on Telegram.
	long := strings.Repeat("a", 3000) + "\n\n" + strings.Repeat("b", 3000) + "\n\n" + strings.Repeat("c", 3000)
	e := newEnv(t, setup{model: func(r fakeopenai.Request) fakeopenai.Response {
		if len(r.ToolResults()) > 0 {
			return fakeopenai.Response{}
		}
		args, _ := json.Marshal(map[string]string{"text": long})
		return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: "chat_send", Arguments: string(args)}}}
	}})
	// The first part goes out; then the user blocks the bot.
	e.tg.FailAlways("sendMessage", 1, blocked)
	evs := e.runEvents("telegram:chat:9", func() { e.tg.Push(e.tg.PrivateText(9, "ann", "tell me a lot")) })

	if sent := e.tg.Sent(); len(sent) != 1 || !strings.HasPrefix(sent[0].Text, "aaa") {
		t.Fatalf("delivered %d messages, want the first part only", len(sent))
	}
	fin := evs[len(evs)-1]
	if fin.Type != events.TypeError || fin.ErrorCode != "DELIVERY_FAILED" ||
		!strings.HasPrefix(fin.ErrorMessage, "part 2 of 3 not delivered: ") || !strings.Contains(fin.ErrorMessage, "bot was blocked") {
		t.Errorf("the run ended with %+v, want DELIVERY_FAILED saying part 2 of 3 was not delivered", fin)
	}
	marked := undelivered(e.entries("telegram:chat:9"))
	if len(marked) != 1 || !strings.HasPrefix(marked[0].Text, "part 2 of 3 not delivered: ") ||
		marked[0].Meta["part"] != float64(2) || marked[0].Meta["parts"] != float64(3) {
		t.Fatalf("chat log entries marked undelivered: %+v, want one naming part 2 of 3", marked)
	}
}
