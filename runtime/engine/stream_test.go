package engine_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/events"
	"github.com/shipmyagent/ship/runtime/journal"
)

// streamingOutbox is the test platform that can show replies while they are
// written; it notes what each stream it opened was asked to do.
type streamingOutbox struct {
	*outbox
	mu     sync.Mutex
	events []string
	seen   chan struct{}
}

func (s *streamingOutbox) note(e string) {
	s.mu.Lock()
	s.events = append(s.events, e)
	s.mu.Unlock()
	select {
	case s.seen <- struct{}{}:
	default:
	}
}

func (s *streamingOutbox) OpenStream(_ context.Context, _ dispatch.RequestContext, resume []string) (dispatch.ReplyStream, bool) {
	return &notedStream{s: s, resume: resume}, true
}

type notedStream struct {
	s      *streamingOutbox
	resume []string
}

func (n *notedStream) Show(context.Context, string) ([]string, error) { return n.resume, nil }
func (n *notedStream) Finish(_ context.Context, text string) (dispatch.Delivery, error) {
	n.s.note(fmt.Sprintf("finish %v %s", n.resume, text))
	return dispatch.Delivery{}, nil
}
func (n *notedStream) Abandon(context.Context) error {
	n.s.note(fmt.Sprintf("abandon %v", n.resume))
	return nil
}
func (n *notedStream) Interval() time.Duration { return time.Millisecond }

// After a crash, a reply that was being written is finished in the messages
// it had shown when its message runs again, and deleted when its message is
// not run again (it had replied once already).
func TestRecoveryFinishesOrRemovesHalfWrittenReplies(t *testing.T) {
	dir := t.TempDir()
	writeJournal(t, dir, func(j *journal.Journal) {
		_ = j.Add(journalItem("a", "1", "m1", "was being answered"))
		_ = j.Start("a")
		_ = j.Streaming("a", []string{"11", "12"})
		_ = j.Add(journalItem("b", "2", "m2", "second reply under way"))
		_ = j.Start("b")
		_ = j.Sending("b")
		_ = j.Streaming("b", []string{"21"})
	})
	h := newHarness(t, harnessOptions{dir: dir, journal: true})
	out := &streamingOutbox{outbox: h.out, seen: make(chan struct{}, 10)}
	h.engine.Register(testChannel, out)
	if n := h.engine.Recover(context.Background()); n != 1 {
		t.Fatalf("recovered %d messages into the queue, want 1", n)
	}
	h.waitIdle()
	want := map[string]bool{"finish [11 12] echo: was being answered": true, "abandon [21]": true}
	deadline := time.After(30 * time.Second) // a hang guard, not a timing assertion
	for {
		out.mu.Lock()
		got := append([]string(nil), out.events...)
		out.mu.Unlock()
		if len(got) == len(want) {
			for _, e := range got {
				if !want[e] {
					t.Errorf("unexpected: %q; want %v", e, want)
				}
			}
			break
		}
		select {
		case <-out.seen:
		case <-deadline:
			t.Fatalf("streams did %q, want %v", got, want)
		}
	}
	if n := len(h.out.all()); n != 0 {
		t.Errorf("%d replies sent anew; the half-written ones are finished in place", n)
	}
}

// A run asks the model to stream its answer only when someone can see it
// being written: a platform that shows replies live, or an event stream
// that would carry the run's content. Nobody watching (or only a counter
// of finished runs, or a stream of another chat), the answer comes whole,
// which costs less.
func TestTheModelStreamsOnlyWhenSomeoneWatches(t *testing.T) {
	h := newHarness(t, harnessOptions{handler: fakeopenai.EchoChatSend, stream: true})
	ask := func(id string) bool {
		h.ask("1", id, "hello "+id)
		reqs := h.fake.Requests()
		return reqs[len(reqs)-1].Stream
	}
	if ask("m1") {
		t.Error("nobody watching: the model was asked to stream")
	}
	final, _ := h.engine.Subscribe(events.Event.Final, 0, 16)
	defer final.Close()
	other, _ := h.engine.Subscribe(func(e events.Event) bool { return e.ChatKey == chatKeyOf("2") }, 0, 16)
	defer other.Close()
	if ask("m2") {
		t.Error("only a counter of finished runs and another chat's stream: the model was asked to stream")
	}
	this, _ := h.engine.Subscribe(func(e events.Event) bool { return e.ChatKey == chatKeyOf("1") }, 0, 256)
	defer this.Close()
	if !ask("m3") {
		t.Error("this chat's event stream open: the model was not asked to stream")
	}
}
