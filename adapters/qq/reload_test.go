package qq_test

import (
	"testing"

	"github.com/shipmyagent/ship/adapters/qq"
	"github.com/shipmyagent/ship/internal/fakeqq"
	"github.com/shipmyagent/ship/runtime/config"
)

// TestReconfigureChangesTheAllowlistsOfARunningAdapter: allowedUserIds
// edited while ship runs holds the next event: the removed author is
// ignored, the added one answered.
func TestReconfigureChangesTheAllowlistsOfARunningAdapter(t *testing.T) {
	e := newEnv(t, setup{opts: func(o *qq.Options) { o.AllowedUserIDs = []string{"U_ANN"} }})
	e.qq.PushC2C("U_ANN", "hi")
	e.waitSent(1)
	var cfg config.Config
	cfg.Adapters.QQ.AllowedUserIDs = []string{"U_BOB"}
	e.adapter.Reconfigure(cfg)
	e.qq.PushC2C("U_ANN", "still there?")
	e.qq.PushC2C("U_BOB", "hello")
	if s := e.waitSent(2)[1]; s.Path != fakeqq.C2CPath("U_BOB") {
		t.Fatalf("sent %+v, want the answer to the author added by the reload", s)
	}
	e.idle()
	if got := e.userTexts("qq:c2c:U_ANN"); len(e.qq.Sent()) != 2 || len(got) != 1 {
		t.Errorf("U_ANN's texts %q, %d sent: the author removed by the reload was answered or logged", got, len(e.qq.Sent()))
	}
}
