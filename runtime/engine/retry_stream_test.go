package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/events"
	"github.com/shipmyagent/ship/runtime/llm"
)

// showingOutbox is a platform that shows replies while they are written
// and notes, in order, every text it was asked to show and what became of
// each stream.
type showingOutbox struct {
	*outbox
	mu    sync.Mutex
	notes []string
	n     int // streams opened
}

func (s *showingOutbox) note(e string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notes = append(s.notes, e)
}

func (s *showingOutbox) OpenStream(context.Context, dispatch.RequestContext, []string) (dispatch.ReplyStream, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return &showingStream{s: s, id: fmt.Sprintf("s%d", s.n)}, true
}

type showingStream struct {
	s  *showingOutbox
	id string
}

func (r *showingStream) Show(_ context.Context, text string) ([]string, error) {
	r.s.note(r.id + " show " + text)
	return []string{r.id}, nil
}

func (r *showingStream) Finish(_ context.Context, text string) (dispatch.Delivery, error) {
	r.s.note(r.id + " finish " + text)
	return dispatch.Delivery{}, nil
}

func (r *showingStream) Abandon(context.Context) error {
	r.s.note(r.id + " abandon")
	return nil
}

func (r *showingStream) Interval() time.Duration { return time.Millisecond }

// A model call whose stream stalls past the idle timeout fails and is made
// again; the chat then shows only the new attempt's reply, never the
// failed attempt's text with the new one glued on.
func TestARetriedModelCallShowsOnlyTheNewAttemptsReply(t *testing.T) {
	const first, second = "a first attempt that stalls", "the second attempt"
	var calls atomic.Int32
	fake, err := fakeopenai.Start(func(r fakeopenai.Request) fakeopenai.Response {
		if len(r.ToolResults()) > 0 {
			return fakeopenai.Response{}
		}
		text, pace := second, fakeopenai.Pace{Bytes: 4, Every: time.Millisecond}
		if calls.Add(1) == 1 {
			text, pace.StallAfter, pace.Stall = first, 4, time.Minute
		}
		args, _ := json.Marshal(map[string]string{"text": text})
		return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: "chat_send", Arguments: string(args)}}, Pace: pace}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	model, err := llm.New(llm.Config{Provider: llm.ProviderOpenAI, BaseURL: fake.BaseURL(),
		Timeouts: llm.Timeouts{FirstByteSeconds: 5, IdleSeconds: 0.3}})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOptions{model: model, stream: true})
	out := &showingOutbox{outbox: h.out}
	h.engine.Register(testChannel, out)
	sub, _ := h.engine.Subscribe(func(e events.Event) bool { return e.Type == events.TypeContent || e.Final() }, 0, 1024)
	defer sub.Close()

	if o := h.ask("1", "m1", "hi"); o.Err != nil || !o.Result.Success {
		t.Fatalf("run failed: %+v", o)
	}
	// The event stream, too, never appends the new attempt's text to a
	// message of the failed one: each message's pieces form a start of one
	// attempt's reply, and the one completed is the new attempt's whole.
	texts, ended := map[string]string{}, map[string]bool{}
	for e := range sub.C {
		if e.Final() {
			break
		}
		if e.Index < 0 {
			ended[e.MessageID] = true
		}
		texts[e.MessageID] += e.Content
	}
	for id, text := range texts {
		switch {
		case ended[id] && text == second:
		case !ended[id] && strings.HasPrefix(first, text):
		default:
			t.Errorf("event stream message %s (ended %v) reads %q", id, ended[id], text)
		}
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("%d model calls for the answer, want 2 (the stalled one made again)", n)
	}
	out.mu.Lock()
	notes := append([]string(nil), out.notes...)
	out.mu.Unlock()
	if len(notes) == 0 || notes[len(notes)-1] != "s2 finish "+second {
		t.Fatalf("the chat went through %q; want it to end with the second attempt's reply finished in a stream of its own", notes)
	}
	abandoned := false
	for _, n := range notes {
		id, rest, _ := strings.Cut(n, " ")
		text, shown := strings.CutPrefix(rest, "show ")
		switch {
		case rest == "abandon":
			abandoned = abandoned || id == "s1"
		case !shown:
		case id == "s1" && strings.HasPrefix(first, text) && !abandoned:
		case id == "s2" && strings.HasPrefix(second, text) && abandoned:
		default:
			t.Errorf("%q: shown text is not a start of its own attempt's reply (all: %q)", n, notes)
		}
	}
	if !abandoned {
		t.Errorf("the failed attempt's reply was never taken out of the chat: %q", notes)
	}
	if sent := h.out.all(); len(sent) != 0 {
		t.Errorf("replies sent anew: %+v", sent)
	}
}
