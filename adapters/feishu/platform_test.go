package feishu_test

import (
	"strings"
	"testing"

	"github.com/shipmyagent/ship/internal/fakelark"
	"github.com/shipmyagent/ship/runtime/dispatch"
)

// A post ship makes on its own (a scheduled task's result) is a new
// message in the chat, but a reply in a thread: Feishu reaches a thread
// only that way.
func TestTaskPostsAreNewMessagesExceptInThreads(t *testing.T) {
	e := newEnv(t, setup{})
	group := e.lk.GroupText("oc_g", "ou_ann", "@_user_1 hi", e.lk.BotMention("@_user_1"))
	thread := e.lk.GroupText("oc_g", "ou_ann", "@_user_1 hi", e.lk.BotMention("@_user_1")).InThread("omt_7", "om_root")
	e.lk.Know(group)
	e.lk.Know(thread)

	last := dispatch.RequestContext{Channel: "feishu", ChatID: "oc_g", ChatKey: "feishu:chat:oc_g", ChatType: "group", MessageID: group.MessageID}
	route := e.adapter.TaskRoute(last)
	if route.MessageID != "" {
		t.Errorf("task route in a group chat %+v: want no message to reply to", route)
	}
	if err := e.adapter.SendText(e.ctx(), route, "daily report"); err != nil {
		t.Fatal(err)
	}
	if s := e.waitSent(1)[0]; s.Path != fakelark.PathCreate || s.ChatID != "oc_g" || s.ReplyTo != "" || s.ThreadID != "" {
		t.Errorf("sent %+v, want a new message in the chat", s)
	}

	last = dispatch.RequestContext{Channel: "feishu", ChatID: "oc_g", ChatKey: "feishu:chat:oc_g:thread:omt_7", ChatType: "group",
		ThreadID: "omt_7", MessageID: thread.MessageID}
	if err := e.adapter.SendText(e.ctx(), e.adapter.TaskRoute(last), "thread report"); err != nil {
		t.Fatal(err)
	}
	if s := e.waitSent(2)[1]; s.ReplyTo != thread.MessageID || !s.ReplyInThread || s.ThreadID != "omt_7" {
		t.Errorf("sent %+v, want a reply in thread omt_7", s)
	}

	p2p := dispatch.RequestContext{Channel: "feishu", ChatID: "oc_p", ChatKey: "feishu:chat:oc_p", ChatType: "p2p", MessageID: "om_p"}
	if got := e.adapter.TaskRoute(p2p); got.MessageID != "" {
		t.Errorf("task route in a one-to-one chat %+v: want no message to reply to", got)
	}
}

func TestHelpSaysGroupsTakeMentionsOnly(t *testing.T) {
	e := newEnv(t, setup{})
	e.push(e.lk.P2PText("oc_h", "ou_ann", "/help"))
	if got := e.waitSent(1)[0].Text; !strings.Contains(got, "(in groups: mention me)") {
		t.Errorf("/help answered %q; Feishu groups deliver only mentions", got)
	}
	if _, ok := any(e.adapter).(dispatch.ReplyAddressed); ok {
		t.Error("the Feishu adapter claims replies address the bot")
	}
}
