package feishu_test

import (
	"strings"
	"testing"

	"github.com/shipmyagent/ship/adapters/feishu"
)

// A sender outside allowedUserIds is neither answered nor logged; a listed
// one is answered as usual.
func TestUserAllowlistIgnoresOthers(t *testing.T) {
	e := newEnv(t, setup{opts: func(o *feishu.Options) { o.AllowedUserIDs = []string{"ou_ann"} }})
	e.push(e.lk.P2PText("oc_stranger", "ou_stranger", "let me in"))
	e.push(e.lk.P2PText("oc_ann", "ou_ann", "hi"))
	if s := e.waitSent(1)[0]; s.ChatID != "oc_ann" || s.Text != "echo: hi" {
		t.Fatalf("sent %+v, want the answer to ou_ann", s)
	}
	e.idle()
	if n := strings.Count(e.logs.String(), "message outside the allowlists ignored"); n != 1 {
		t.Errorf("%d messages logged as ignored, want 1", n)
	}
	if n := len(e.lk.Sent()); n != 1 || len(e.entries("feishu:chat:oc_stranger")) != 0 {
		t.Errorf("%d sent; the stranger's chat log %+v: a user outside the allowlist was answered or logged",
			n, e.entries("feishu:chat:oc_stranger"))
	}
	if n := len(e.entries("feishu:chat:oc_ann")); n != 2 {
		t.Errorf("ou_ann's chat log has %d entries, want the message and its answer", n)
	}
}

// A group outside allowedChatIds is neither answered (even when the bot is
// mentioned) nor logged; a listed group is, unaddressed messages included.
func TestChatAllowlistIgnoresOtherChats(t *testing.T) {
	e := newEnv(t, setup{opts: func(o *feishu.Options) { o.AllowedChatIDs = []string{"oc_ours"} }})
	e.push(e.lk.GroupText("oc_theirs", "ou_ann", "people talking"))
	e.push(e.lk.GroupText("oc_theirs", "ou_ann", "@_user_1 answer me", e.lk.BotMention("@_user_1")))
	e.push(e.lk.GroupText("oc_ours", "ou_ann", "people talking"))
	e.push(e.lk.GroupText("oc_ours", "ou_ann", "@_user_1 answer me", e.lk.BotMention("@_user_1")))
	if s := e.waitSent(1)[0]; s.ChatID != "oc_ours" || s.Text != "echo: answer me" {
		t.Fatalf("sent %+v, want the answer in oc_ours", s)
	}
	e.idle()
	if n := strings.Count(e.logs.String(), "message outside the allowlists ignored"); n != 2 {
		t.Errorf("%d messages logged as ignored, want 2", n)
	}
	if n := len(e.lk.Sent()); n != 1 {
		t.Errorf("%d messages sent, want 1", n)
	}
	if es := e.entries("feishu:chat:oc_theirs"); len(es) != 0 {
		t.Errorf("a chat outside the allowlist was logged: %+v", es)
	}
	if n := len(e.entries("feishu:chat:oc_ours")); n != 3 {
		t.Errorf("oc_ours' chat log has %d entries, want both messages and the answer", n)
	}
}
