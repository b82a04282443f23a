package telegram_test

import (
	"strings"
	"testing"

	"github.com/shipmyagent/ship/runtime/dispatch"
)

// In a Telegram group a reply to the bot's message reaches it as a mention
// does, and /help says so.
func TestHelpSaysRepliesAddressTheBot(t *testing.T) {
	e := newEnv(t, setup{})
	e.tg.Push(e.tg.PrivateText(70, "ann", "/help"))
	if got := e.waitSent(1)[0].Text; !strings.Contains(got, "(in groups: mention me or reply to my message)") {
		t.Errorf("/help answered %q", got)
	}
}

// A post ship makes on its own (a scheduled task's result) is a new
// message in the chat or topic: Telegram needs no rule of its own for it,
// and has no reply window.
func TestTaskPostsFollowTheDefaultRoute(t *testing.T) {
	e := newEnv(t, setup{noStart: true})
	last := dispatch.RequestContext{Channel: "telegram", ChatID: "-100", ChatKey: "telegram:chat:-100:topic:5", ChatType: "supergroup", MessageThreadID: 5, MessageID: "9"}
	want := last
	want.MessageID = ""
	if got := dispatch.TaskRoute(e.adapter, last); got != want {
		t.Errorf("task route %+v, want %+v", got, want)
	}
	if hint := dispatch.ReplyWindowHint(e.adapter, last); hint != "" {
		t.Errorf("reply window hint %q, want none", hint)
	}
}
