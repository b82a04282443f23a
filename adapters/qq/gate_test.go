package qq_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/adapters/qq"
	"github.com/shipmyagent/ship/internal/adaptertest"
	"github.com/shipmyagent/ship/internal/fakeqq"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/ingress"
)

// In cluster mode one replica holds the gateway (it holds the connection's
// lease) while every replica keeps a token, runs turns and takes webhooks:
// these tests give the adapter a gate in place of the lease.

// arriveElsewhere hands the engine a C2C message from user, as the replica
// holding the gateway would: the turn runs here and its reply goes out
// through this adapter. It returns the message.
func (e *env) arriveElsewhere(user, text string) fakeqq.Event {
	e.t.Helper()
	ev := e.qq.C2C(user, text) // known to QQ, so a reply may name it
	_, err := e.engine.Accept(e.ctx(), ingress.Submission{
		Channel: chat.ChannelQQ, ChatKey: "qq:c2c:" + user,
		Message: ingress.IncomingChatMessage{ChatID: user, ChatType: "c2c", MessageID: ev.MessageID, UserID: user, Text: text},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return ev
}

func TestStandbyGetsATokenAndAnswersWithoutTheGateway(t *testing.T) {
	gate := adaptertest.NewGate() // never opened: another replica holds the gateway
	e := newEnv(t, setup{noStart: true})
	e.adapter.GateConnection(gate.Hold)
	e.start()
	adaptertest.WaitStandby(t, e.adapter)

	ev := e.arriveElsewhere("U1", "hello")
	s := e.waitSent(1)[0]
	if s.Content != "echo: hello" || s.MsgID != ev.MessageID || s.Path != fakeqq.C2CPath("U1") {
		t.Fatalf("the standby sent %+v", s)
	}
	if e.qq.TokenCalls() == 0 {
		t.Error("the standby sent without a token from the endpoint")
	}
	if identified, resumed, _, _ := e.qq.Gateway(); identified+resumed != 0 {
		t.Errorf("the standby opened the gateway (identified %d, resumed %d): two replicas would take events", identified, resumed)
	}
	if st := e.adapter.Status(); st.State != adapters.StateStandby {
		t.Errorf("status %+v after the reply, want standby", st)
	}
}

// Webhook mode is not gated: every replica takes QQ's calls.
func TestWebhookIsServedOnAStandby(t *testing.T) {
	gate := adaptertest.NewGate()
	e := newEnv(t, setup{noStart: true, opts: func(o *qq.Options) { o.Mode = qq.ModeWebhook }})
	e.adapter.GateConnection(gate.Hold)
	url := newWebhookServer(t, e.adapter)
	e.start()
	e.until("the webhook to be ready", func() bool { return e.adapter.Status().State == "running" })
	ev := e.qq.GroupAt("G1", "M1", "via the webhook")
	if status, _, err := e.qq.DeliverWebhook(e.ctx(), url, appSecret, ev); err != nil || status != http.StatusOK {
		t.Fatalf("webhook delivery: %d %v", status, err)
	}
	if s := e.waitSent(1)[0]; s.Content != "echo: via the webhook" || s.MsgID != ev.MessageID {
		t.Fatalf("sent %+v", s)
	}
	if calls, _ := gate.Counts(); calls != 0 {
		t.Errorf("webhook mode asked the gate %d times", calls)
	}
}

// The lease is won, lost and won again: the gateway closes and comes back,
// and in between the replica keeps its token fresh and still answers.
func TestGatewayClosesAndReturnsWithTheGate(t *testing.T) {
	gate := adaptertest.NewGate()
	// Short-lived tokens: the refresher must be seen at work on standby.
	e := newEnv(t, setup{noStart: true, fake: fakeqq.Options{TokenLifetime: 2 * time.Second}})
	e.adapter.GateConnection(gate.Hold)
	e.start()
	adaptertest.WaitStandby(t, e.adapter)

	gate.Open()
	e.qq.PushC2C("U1", "first")
	if s := e.waitSent(1)[0]; s.Content != "echo: first" {
		t.Fatalf("sent %+v", s)
	}
	if st := e.adapter.Status(); st.State != "running" {
		t.Errorf("status %+v while holding the gateway, want running", st)
	}

	gate.Shut()
	gate.WaitReturned(t, 1)
	adaptertest.WaitStandby(t, e.adapter)
	if err := e.qq.WaitTokenCalls(e.ctx(), e.qq.TokenCalls()+1); err != nil {
		t.Fatalf("no token refresh after losing the lease: %v", err)
	}
	ev := e.arriveElsewhere("U2", "taken elsewhere")
	if s := e.waitSent(2)[1]; s.Content != "echo: taken elsewhere" || s.MsgID != ev.MessageID {
		t.Fatalf("after losing the lease the replica sent %+v", s)
	}

	// Sent while nobody here holds the gateway: QQ keeps it for the session.
	e.qq.PushC2C("U1", "second")
	gate.Open()
	if err := e.qq.WaitConnected(e.ctx(), 2); err != nil {
		t.Fatalf("the gateway did not come back: %v", err)
	}
	if s := e.waitSent(3)[2]; s.Content != "echo: second" {
		t.Fatalf("after the lease came back the bot sent %+v", s)
	}
	e.until("the adapter running again", func() bool { return e.adapter.Status().State == "running" })
}
