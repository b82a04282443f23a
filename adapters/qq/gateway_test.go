package qq_test

import (
	"testing"

	"github.com/shipmyagent/ship/internal/fakeqq"
)

func TestDroppedWebsocketReconnectsAndTheNextMessageIsAnswered(t *testing.T) {
	e := newEnv(t, setup{})
	e.qq.PushC2C("U1", "before the drop")
	e.waitSent(1)
	if err := e.qq.DropConnection(); err != nil {
		t.Fatal(err)
	}
	// Pushed while the bot is away: QQ holds it for the session.
	ev := e.qq.PushC2C("U1", "after the drop")
	if err := e.qq.WaitConnected(e.ctx(), 2); err != nil {
		t.Fatalf("no reconnect: %v", err)
	}
	s := e.waitSent(2)[1]
	if s.Content != "echo: after the drop" || s.MsgID != ev.MessageID {
		t.Fatalf("after the reconnect the bot sent %+v", s)
	}
	if identified, resumed, _, _ := e.qq.Gateway(); identified != 1 || resumed != 1 {
		t.Errorf("identified %d, resumed %d: want the session resumed, not a new one", identified, resumed)
	}
}

func TestReconnectRequestIsResumed(t *testing.T) {
	e := newEnv(t, setup{})
	if err := e.qq.WaitIdentified(e.ctx(), 1); err != nil {
		t.Fatal(err)
	}
	if err := e.qq.RequestReconnect(); err != nil {
		t.Fatal(err)
	}
	if err := e.qq.WaitConnected(e.ctx(), 2); err != nil {
		t.Fatal(err)
	}
	e.qq.PushGroupAt("G1", "M1", "still with me?")
	if s := e.waitSent(1)[0]; s.Content != "echo: still with me?" {
		t.Fatalf("sent %+v", s)
	}
}

func TestRedeliveredEventIsAnsweredOnce(t *testing.T) {
	e := newEnv(t, setup{})
	ev := e.qq.PushGroupAt("G5", "M5", "answer me once")
	e.waitSent(1)
	if err := e.qq.Redeliver(ev.ID); err != nil {
		t.Fatal(err)
	}
	// Events of one connection are handled in order: once this one is
	// answered, the re-delivery before it has been handled too.
	e.qq.PushGroupAt("G5", "M5", "next question")
	sent := e.waitSent(2)
	if sent[1].Content != "echo: next question" {
		t.Fatalf("second reply %+v: the re-delivered event was answered again", sent[1])
	}
	e.idle()
	if n := len(e.qq.Sent()); n != 2 {
		t.Errorf("%d replies, want 2", n)
	}
	if n := e.model.RequestCount(); n != 2 { // one call per run: chat_send ends it
		t.Errorf("model called %d times, want 2", n)
	}
	if got := e.userTexts("qq:group:G5"); len(got) != 2 {
		t.Errorf("user entries %q: the re-delivery was logged", got)
	}
}

// A restart over the same .ship answers nothing twice even when QQ
// re-delivers (the dedupe lives in the ChatStore), and answers what is new.
func TestRestartAnswersNothingTwice(t *testing.T) {
	dir := t.TempDir()
	fake := newFake(t, fakeqq.Options{})
	e := newEnv(t, setup{dir: dir, qq: fake})
	ev := fake.PushC2C("U9", "question before restart")
	e.waitSent(1)
	e.shutdown()

	e2 := newEnv(t, setup{dir: dir, qq: fake})
	// The new process has a new session: wait for it, or QQ would send the
	// re-delivery to the old, dead connection.
	if err := fake.WaitIdentified(e2.ctx(), 2); err != nil {
		t.Fatal(err)
	}
	if err := fake.Redeliver(ev.ID); err != nil {
		t.Fatal(err)
	}
	fake.PushC2C("U9", "question after restart")
	sent := e2.waitSent(2)
	if sent[1].Content != "echo: question after restart" {
		t.Fatalf("after restart the bot sent %+v", sent[1])
	}
	e2.idle()
	if n := len(fake.Sent()); n != 2 {
		t.Errorf("%d replies in all, want 2", n)
	}
	if n := e2.model.RequestCount(); n != 1 {
		t.Errorf("the new process called the model %d times, want 1 (one run)", n)
	}
}
