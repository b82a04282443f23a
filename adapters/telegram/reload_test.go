package telegram_test

import (
	"testing"

	"github.com/shipmyagent/ship/adapters/telegram"
	"github.com/shipmyagent/ship/runtime/config"
)

// TestReconfigureChangesTheAllowlistsOfARunningAdapter: the operator
// removes a user from allowedUserIds and adds another while ship runs;
// from then on the removed one is ignored and the added one answered.
func TestReconfigureChangesTheAllowlistsOfARunningAdapter(t *testing.T) {
	e := newEnv(t, setup{opts: func(o *telegram.Options) { o.AllowedUserIDs = []int64{10} }})
	e.tg.Push(e.tg.PrivateText(10, "friend", "hi"))
	if s := e.waitSent(1)[0]; s.ChatID != 10 {
		t.Fatalf("sent %+v", s)
	}
	var cfg config.Config
	cfg.Adapters.Telegram.AllowedUserIDs = []int64{11}
	e.adapter.Reconfigure(cfg)
	e.tg.Push(e.tg.PrivateText(10, "friend", "still there?"))
	e.tg.Push(e.tg.PrivateText(11, "newcomer", "hello"))
	if s := e.waitSent(2)[1]; s.ChatID != 11 {
		t.Fatalf("sent %+v, want the reply to the user added by the reload", s)
	}
	e.idle()
	if len(e.tg.Sent()) != 2 || len(e.entries("telegram:chat:10")) != 2 {
		t.Errorf("the user removed by the reload was answered or logged: sent %+v", e.tg.Sent())
	}
}
