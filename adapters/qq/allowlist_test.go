package qq_test

import (
	"strings"
	"testing"

	"github.com/shipmyagent/ship/adapters/qq"
	"github.com/shipmyagent/ship/internal/fakeqq"
)

// An author outside allowedUserIds is neither answered nor logged; a listed
// one is answered as usual.
func TestUserAllowlistIgnoresOthers(t *testing.T) {
	e := newEnv(t, setup{opts: func(o *qq.Options) { o.AllowedUserIDs = []string{"U_ANN"} }})
	e.qq.PushC2C("U_STRANGER", "let me in")
	e.qq.PushGroupAt("G1", "U_STRANGER", "let me in too")
	e.qq.PushC2C("U_ANN", "hi")
	if s := e.waitSent(1)[0]; s.Path != fakeqq.C2CPath("U_ANN") || s.Content != "echo: hi" {
		t.Fatalf("sent %+v, want the answer to U_ANN", s)
	}
	e.idle()
	if n := strings.Count(e.logs.String(), "message outside the allowlists ignored"); n != 2 {
		t.Errorf("%d messages logged as ignored, want 2", n)
	}
	if n := len(e.qq.Sent()); n != 1 {
		t.Errorf("%d messages sent, want 1", n)
	}
	if a, b := e.entries("qq:c2c:U_STRANGER"), e.entries("qq:group:G1"); len(a)+len(b) != 0 {
		t.Errorf("an author outside the allowlist was logged: %+v %+v", a, b)
	}
	if got := e.userTexts("qq:c2c:U_ANN"); len(got) != 1 || got[0] != "hi" {
		t.Errorf("U_ANN's chat log user texts %q", got)
	}
}

// A group outside allowedChatIds is neither answered nor logged; a listed
// group is.
func TestChatAllowlistIgnoresOtherChats(t *testing.T) {
	e := newEnv(t, setup{opts: func(o *qq.Options) { o.AllowedChatIDs = []string{"G_OURS"} }})
	e.qq.PushGroupAt("G_THEIRS", "M1", "answer me")
	e.qq.PushGroupAt("G_OURS", "M1", "answer me")
	if s := e.waitSent(1)[0]; s.Path != fakeqq.GroupPath("G_OURS") || s.Content != "echo: answer me" {
		t.Fatalf("sent %+v, want the answer in G_OURS", s)
	}
	e.idle()
	if n := strings.Count(e.logs.String(), "message outside the allowlists ignored"); n != 1 {
		t.Errorf("%d messages logged as ignored, want 1", n)
	}
	if n := len(e.qq.Sent()); n != 1 {
		t.Errorf("%d messages sent, want 1", n)
	}
	if es := e.entries("qq:group:G_THEIRS"); len(es) != 0 {
		t.Errorf("a chat outside the allowlist was logged: %+v", es)
	}
	if got := e.userTexts("qq:group:G_OURS"); len(got) != 1 {
		t.Errorf("G_OURS' chat log user texts %q", got)
	}
}
