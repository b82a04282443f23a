package qq_test

import (
	"context"
	"sync"
	"testing"

	"github.com/shipmyagent/ship/internal/adaptertest"
)

// sharedSession is the store two replicas share; in ship it is a key of a
// NATS KV bucket (runtime/cluster Sessions).
type sharedSession struct {
	mu  sync.Mutex
	id  string
	seq uint32
}

func (s *sharedSession) LoadSession(context.Context) (string, uint32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id, s.seq, nil
}

func (s *sharedSession) SaveSession(_ context.Context, id string, seq uint32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.id, s.seq = id, seq
	return nil
}

func (s *sharedSession) get() (string, uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id, s.seq
}

// The replica that takes the gateway over resumes the session the last
// holder saved, so QQ replays what was sent while nobody was connected;
// identifying afresh would start a new session without it.
func TestATakeoverResumesTheSessionTheLastHolderSaved(t *testing.T) {
	store := &sharedSession{}
	first := newEnv(t, setup{noStart: true})
	firstGate := adaptertest.NewGate()
	first.adapter.GateConnection(firstGate.Hold)
	first.adapter.KeepSessionIn(store)
	first.start()
	next := newEnv(t, setup{noStart: true, qq: first.qq})
	nextGate := adaptertest.NewGate()
	next.adapter.GateConnection(nextGate.Hold)
	next.adapter.KeepSessionIn(store)
	next.start()

	firstGate.Open()
	first.qq.PushC2C("U1", "before the takeover")
	if s := first.waitSent(1)[0]; s.Content != "echo: before the takeover" {
		t.Fatalf("sent %+v", s)
	}
	// READY has seq 1 and the message seq 2 in the fake: once the store
	// holds 2, the next holder resumes after the message.
	first.until("the session saved with the message's seq", func() bool { id, seq := store.get(); return id != "" && seq >= 2 })

	firstGate.Shut() // the holder is gone
	firstGate.WaitReturned(t, 1)
	first.qq.PushC2C("U1", "while nobody held the gateway")
	nextGate.Open()
	if s := next.waitSent(2)[1]; s.Content != "echo: while nobody held the gateway" {
		t.Fatalf("after the takeover the bot sent %+v", s)
	}
	if identified, resumed, _, _ := first.qq.Gateway(); identified != 1 || resumed != 1 {
		t.Errorf("gateway: identified %d, resumed %d; want the takeover to resume the one session", identified, resumed)
	}
	if got := len(first.qq.Sent()); got != 2 {
		t.Errorf("%d messages sent, want 2: the message before the takeover was replayed and answered again", got)
	}
}
