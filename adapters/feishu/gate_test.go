package feishu_test

import (
	"net/http"
	"testing"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/adapters/feishu"
	"github.com/shipmyagent/ship/internal/adaptertest"
	"github.com/shipmyagent/ship/internal/fakelark"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/ingress"
)

// In cluster mode one replica holds the websocket (it holds the
// connection's lease) while every replica runs turns and takes webhooks:
// these tests give the adapter a gate in place of the lease.

// arriveElsewhere hands the engine ev as the replica holding the websocket
// would: the turn runs here and its reply goes out through this adapter.
func (e *env) arriveElsewhere(ev fakelark.Event, text string) {
	e.t.Helper()
	e.lk.Know(ev)
	_, err := e.engine.Accept(e.ctx(), ingress.Submission{
		Channel: chat.ChannelFeishu, ChatKey: "feishu:chat:" + ev.ChatID,
		Message: ingress.IncomingChatMessage{ChatID: ev.ChatID, ChatType: ev.ChatType, MessageID: ev.MessageID,
			UserID: ev.SenderOpenID, Text: text},
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

func TestStandbyAnswersWithoutTheWebsocket(t *testing.T) {
	gate := adaptertest.NewGate() // never opened: another replica holds the websocket
	e := newEnv(t, setup{noStart: true})
	e.adapter.GateConnection(gate.Hold)
	e.start()
	adaptertest.WaitStandby(t, e.adapter)

	e.arriveElsewhere(e.lk.P2PText("oc_sb", "ou_ann", "hello"), "hello")
	s := e.waitSent(1)[0]
	if s.ChatID != "oc_sb" || s.Text != "echo: hello" {
		t.Fatalf("the standby sent %+v", s)
	}
	if n := e.lk.Connections(); n != 0 {
		t.Errorf("the standby opened %d websockets: two replicas would take events", n)
	}
	if st := e.adapter.Status(); st.State != adapters.StateStandby {
		t.Errorf("status %+v after the reply, want standby", st)
	}
}

// Webhook mode is not gated: every replica takes Feishu's calls.
func TestWebhookIsServedOnAStandby(t *testing.T) {
	gate := adaptertest.NewGate()
	e := newEnv(t, setup{mode: feishu.ModeWebhook, noStart: true})
	e.adapter.GateConnection(gate.Hold)
	e.start()
	e.waitRunning()
	status, answer, err := e.lk.DeliverWebhook(e.ctx(), e.hookURL, encryptKey, e.lk.P2PText("oc_wh", "ou_ann", "via the webhook"))
	if err != nil || status != http.StatusOK {
		t.Fatalf("webhook delivery: %d %s %v", status, answer, err)
	}
	if s := e.waitSent(1)[0]; s.ChatID != "oc_wh" || s.Text != "echo: via the webhook" {
		t.Fatalf("sent %+v", s)
	}
	if calls, _ := gate.Counts(); calls != 0 {
		t.Errorf("webhook mode asked the gate %d times", calls)
	}
}

// The lease is won, lost and won again: the websocket closes and comes
// back, and in between the replica still answers.
func TestWebsocketClosesAndReturnsWithTheGate(t *testing.T) {
	gate := adaptertest.NewGate()
	e := newEnv(t, setup{noStart: true})
	e.adapter.GateConnection(gate.Hold)
	e.start()
	adaptertest.WaitStandby(t, e.adapter)

	gate.Open()
	e.push(e.lk.P2PText("oc_g", "ou_ann", "first"))
	if s := e.waitSent(1)[0]; s.Text != "echo: first" {
		t.Fatalf("sent %+v", s)
	}
	if st := e.adapter.Status(); st.State != "running" {
		t.Errorf("status %+v while holding the websocket, want running", st)
	}

	gate.Shut()
	gate.WaitReturned(t, 1)
	adaptertest.WaitStandby(t, e.adapter)
	e.arriveElsewhere(e.lk.P2PText("oc_g2", "ou_bob", "taken elsewhere"), "taken elsewhere")
	if s := e.waitSent(2)[1]; s.ChatID != "oc_g2" || s.Text != "echo: taken elsewhere" {
		t.Fatalf("after losing the lease the replica sent %+v", s)
	}

	gate.Open()
	e.push(e.lk.P2PText("oc_g", "ou_ann", "second"))
	if s := e.waitSent(3)[2]; s.Text != "echo: second" {
		t.Fatalf("after the lease came back the bot sent %+v", s)
	}
	if n := e.lk.Connections(); n != 2 {
		t.Errorf("%d websocket connections, want 2 (one per turn of holding the lease)", n)
	}
	e.waitRunning()
}
