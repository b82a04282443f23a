package feishu_test

import (
	"testing"

	"github.com/shipmyagent/ship/adapters/feishu"
	"github.com/shipmyagent/ship/runtime/config"
)

// TestReconfigureChangesTheAllowlistsOfARunningAdapter: allowedUserIds
// edited while ship runs holds the next event: the removed sender is
// ignored, the added one answered.
func TestReconfigureChangesTheAllowlistsOfARunningAdapter(t *testing.T) {
	e := newEnv(t, setup{opts: func(o *feishu.Options) { o.AllowedUserIDs = []string{"ou_ann"} }})
	e.push(e.lk.P2PText("oc_ann", "ou_ann", "hi"))
	e.waitSent(1)
	var cfg config.Config
	cfg.Adapters.Feishu.AllowedUserIDs = []string{"ou_bob"}
	e.adapter.Reconfigure(cfg)
	e.push(e.lk.P2PText("oc_ann", "ou_ann", "still there?"))
	e.push(e.lk.P2PText("oc_bob", "ou_bob", "hello"))
	if s := e.waitSent(2)[1]; s.ChatID != "oc_bob" {
		t.Fatalf("sent %+v, want the answer to the sender added by the reload", s)
	}
	e.idle()
	if n := len(e.lk.Sent()); n != 2 || len(e.entries("feishu:chat:oc_ann")) != 2 {
		t.Errorf("%d sent, ou_ann's log %d entries: the sender removed by the reload was answered or logged", n, len(e.entries("feishu:chat:oc_ann")))
	}
}
