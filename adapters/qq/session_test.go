package qq_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/shipmyagent/ship/internal/adaptertest"
)

// sharedPoints is the store two replicas share; in ship it is the
// ship_offsets KV bucket (runtime/cluster ResumePoints).
type sharedPoints struct {
	mu     sync.Mutex
	values map[string][]byte
}

func (s *sharedPoints) Load(_ context.Context, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.values[key], nil
}

func (s *sharedPoints) Save(_ context.Context, key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.values == nil {
		s.values = map[string][]byte{}
	}
	s.values[key] = value
	return nil
}

// get decodes the saved session: the layout runtime/cluster has always
// kept under qq.session, so replicas of different versions agree.
func (s *sharedPoints) get(t *testing.T) (string, uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var v struct {
		ID  string `json:"id"`
		Seq uint32 `json:"seq"`
	}
	if b := s.values["qq.session"]; b != nil {
		if err := json.Unmarshal(b, &v); err != nil {
			t.Errorf("qq.session holds %q: %v", b, err)
		}
	}
	return v.ID, v.Seq
}

// The replica that takes the gateway over resumes the session the last
// holder saved, so QQ replays what was sent while nobody was connected;
// identifying afresh would start a new session without it.
func TestATakeoverResumesTheSessionTheLastHolderSaved(t *testing.T) {
	store := &sharedPoints{}
	first := newEnv(t, setup{noStart: true})
	firstGate := adaptertest.NewGate()
	first.adapter.GateConnection(firstGate.Hold)
	first.adapter.KeepResumePointsIn(store)
	first.start()
	next := newEnv(t, setup{noStart: true, qq: first.qq})
	nextGate := adaptertest.NewGate()
	next.adapter.GateConnection(nextGate.Hold)
	next.adapter.KeepResumePointsIn(store)
	next.start()

	firstGate.Open()
	first.qq.PushC2C("U1", "before the takeover")
	if s := first.waitSent(1)[0]; s.Content != "echo: before the takeover" {
		t.Fatalf("sent %+v", s)
	}
	// READY has seq 1 and the message seq 2 in the fake: once the store
	// holds 2, the next holder resumes after the message.
	first.until("the session saved with the message's seq", func() bool { id, seq := store.get(t); return id != "" && seq >= 2 })

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
