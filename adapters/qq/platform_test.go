package qq_test

import (
	"strings"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeqq"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
)

// A post ship makes on its own (a scheduled task's result) is a passive
// reply to the chat's latest message: QQ takes nothing else from a bot.
// When QQ refuses one, the person reading why is told the reply windows.
func TestTaskPostsAnswerTheChatsLatestMessage(t *testing.T) {
	e := newEnv(t, setup{})
	ev := e.qq.PushGroupAt("G1", "M1", "hello")
	e.waitSent(1)
	e.idle()
	var last dispatch.RequestContext
	for _, en := range e.entries("qq:group:G1") {
		if en.Role == chat.RoleUser {
			ct, _ := en.Meta["chatType"].(string)
			last = dispatch.RequestContext{Channel: en.Channel, ChatID: en.ChatID, ChatKey: en.ChatKey, ChatType: ct, MessageID: en.MessageID}
		}
	}
	if last.MessageID != ev.MessageID {
		t.Fatalf("latest user message %+v, want id %s", last, ev.MessageID)
	}
	route := e.adapter.TaskRoute(last)
	if route != last {
		t.Errorf("task route %+v, want the latest message's own route %+v", route, last)
	}
	if err := e.adapter.SendText(e.ctx(), route, "daily report"); err != nil {
		t.Fatal(err)
	}
	if s := e.waitSent(2)[1]; s.MsgID != ev.MessageID || s.Path != fakeqq.GroupPath("G1") || !strings.Contains(s.Content, "daily report") {
		t.Errorf("sent %+v, want a passive reply to %s", s, ev.MessageID)
	}
	const want = "QQ takes a bot's message only as a reply to a user's message: within 5 minutes of it in groups, 60 in C2C chats"
	if got := e.adapter.ReplyWindowHint(route); got != want {
		t.Errorf("reply window hint %q, want %q", got, want)
	}
}

func TestHelpSaysGroupsTakeMentionsOnly(t *testing.T) {
	e := newEnv(t, setup{})
	e.qq.PushC2C("U3", "/help")
	if s := e.waitSent(1)[0]; !strings.Contains(s.Content, "(in groups: mention me)") {
		t.Errorf("/help answered %q; QQ groups deliver only mentions", s.Content)
	}
	if _, ok := any(e.adapter).(dispatch.ReplyAddressed); ok {
		t.Error("the QQ adapter claims replies address the bot")
	}
}
