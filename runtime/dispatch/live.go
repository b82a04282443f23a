package dispatch

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Live is what one run shows in its chat while it works: the platform's
// typing indicator, and each chat_send reply while the model is still
// writing it. The Runner makes one per run and puts it in the run's context
// (WithLive); the Deliverer finishes a streamed reply instead of sending it
// anew. Without a Live in the context, or on a platform that can do neither,
// replies go whole as before.
type Live struct {
	disp Dispatcher
	req  RequestContext
	log  zerolog.Logger
	// visible, when set, hears the ids of the messages a stream left
	// visible whenever they change (the journal keeps them, so a resumed
	// run can take them over).
	visible func(ids []string) error

	mu      sync.Mutex
	resume  []string               // left by an interrupted attempt, taken by the first stream
	streams map[[2]int]*liveStream // made on the first streamed reply
	step    int                    // the step whose calls are counted
	calls   int                    // tool calls seen in step
	current [2]int                 // the chat_send call running now ({0,0}: none)
	typing  func(context.Context)
	closed  bool
}

// Shows reports whether the run's platform shows a reply while it is
// written (its dispatcher is a Streamer).
func (l *Live) Shows() bool {
	_, ok := l.disp.(Streamer)
	return ok
}

// LiveOptions configure a Live.
type LiveOptions struct {
	// Resume holds the message ids an interrupted earlier attempt of the
	// run left visible (journal.Item.Streamed).
	Resume []string
	// Visible hears the ids of the visible messages of the reply being
	// streamed whenever they change.
	Visible func(ids []string) error
	Logger  zerolog.Logger
}

// NewLive returns the Live of a run answering req through reg. It starts
// the platform's typing indicator at once, where there is one.
func NewLive(ctx context.Context, reg *Registry, req RequestContext, opts LiveOptions) *Live {
	l := &Live{req: req, log: opts.Logger, visible: opts.Visible, resume: opts.Resume}
	if reg != nil && req.Channel != "" {
		l.disp, _ = reg.Lookup(req.Channel)
	}
	if t, ok := l.disp.(Typist); ok {
		l.typing = t.StartTyping(ctx, req)
	}
	return l
}

// cleanupTimeout bounds taking an unfinished reply out of the chat.
const cleanupTimeout = 15 * time.Second

// WithLive returns a context whose run shows its replies through l.
func WithLive(ctx context.Context, l *Live) context.Context {
	return with(ctx, func(r *Run) { r.Live = l })
}

// LiveFromContext returns the Live of ctx's run, if any.
func LiveFromContext(ctx context.Context) *Live {
	r, _ := RunFrom(ctx)
	return r.Live
}

// ToolCall notes that the run calls tool next (in the order of the step's
// calls): a chat_send call then finishes the stream of its own text.
func (l *Live) ToolCall(step int, tool string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if step != l.step {
		l.step, l.calls = step, 0
	}
	idx := l.calls
	l.calls++
	l.current = [2]int{}
	if tool == ChatSendTool {
		l.current = [2]int{step, idx}
	}
}

// Writing shows text, the reply the step's call number idx has written so
// far (see ReplyTexts), in the chat, where the platform can.
func (l *Live) Writing(ctx context.Context, step, idx int, text string) {
	if text == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	k := [2]int{step, idx}
	s := l.streams[k]
	if s == nil {
		st, ok := l.disp.(Streamer)
		if !ok {
			return
		}
		rs, ok := st.OpenStream(ctx, l.req, l.takeResumeLocked())
		if !ok {
			l.disp = nonStreaming{l.disp}
			return
		}
		s = newLiveStream(ctx, rs, l)
		if l.streams == nil {
			l.streams = map[[2]int]*liveStream{}
		}
		l.streams[k] = s
	}
	s.set(text)
}

// Restart takes what step's calls showed out of the chat: the model call
// that wrote it failed and is made again, and the new attempt shows its
// own reply from the start rather than edits of a text it never wrote.
func (l *Live) Restart(ctx context.Context, step int) {
	l.mu.Lock()
	var open []ReplyStream
	for k, s := range l.streams {
		if k[0] == step {
			open = append(open, s.stop())
			delete(l.streams, k)
		}
	}
	l.mu.Unlock()
	if len(open) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	var errs []error
	for _, rs := range open {
		errs = append(errs, rs.Abandon(ctx))
	}
	if l.visible != nil {
		// Nothing of this reply is left for a resumed run to take over.
		errs = append(errs, l.visible(nil))
	}
	if err := errors.Join(errs...); err != nil {
		l.log.Warn().Err(err).Str("chatKey", l.req.ChatKey).Msg("removing the reply of a failed model call")
	}
}

func (l *Live) takeResumeLocked() []string {
	r := l.resume
	l.resume = nil
	return r
}

// nonStreaming hides a Streamer that declined once: the chat will not
// stream, so later calls need not ask again.
type nonStreaming struct{ Dispatcher }

// take returns the stream that a delivery about to happen finishes: the
// running chat_send call's own, or one over the messages an interrupted
// attempt left. nil: send whole.
func (l *Live) take(ctx context.Context, via string) ReplyStream {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	if via == ViaChatSend && l.current != ([2]int{}) {
		if s := l.streams[l.current]; s != nil {
			delete(l.streams, l.current)
			l.current = [2]int{}
			return s.stop()
		}
	}
	if len(l.resume) == 0 {
		return nil
	}
	st, ok := l.disp.(Streamer)
	if !ok {
		return nil
	}
	rs, ok := st.OpenStream(ctx, l.req, l.takeResumeLocked())
	if !ok {
		return nil
	}
	return rs
}

// replying notes a reply about to go out: typing stops.
func (l *Live) replying(ctx context.Context) {
	l.mu.Lock()
	stop := l.typing
	l.typing = nil
	l.mu.Unlock()
	if stop != nil {
		stop(ctx)
	}
}

// Close ends the run's showing: typing stops, and a reply still being
// streamed (its call never delivered it) is taken out of the chat. When
// the run was cut short by shutdown (keep), what was shown stays for the
// resumed run to take over.
func (l *Live) Close(ctx context.Context, keep bool) {
	l.mu.Lock()
	l.closed = true
	stop := l.typing
	l.typing = nil
	var open []ReplyStream
	for _, s := range l.streams {
		open = append(open, s.stop())
	}
	l.streams = nil
	resume := l.takeResumeLocked()
	disp := l.disp
	l.mu.Unlock()
	if stop != nil {
		stop(context.WithoutCancel(ctx))
	}
	if keep {
		return
	}
	// The run's own context may be done (timed out); cleaning up is not.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	errs := []error{RemoveShown(ctx, disp, l.req, resume)}
	for _, rs := range open {
		errs = append(errs, rs.Abandon(ctx))
	}
	if err := errors.Join(errs...); err != nil {
		l.log.Warn().Err(err).Str("chatKey", l.req.ChatKey).Msg("removing an unfinished streamed reply")
	}
}

// liveStream shows one reply while it is written: set hands it the latest
// text without waiting, and its goroutine calls Show no more often than
// the platform's Interval allows, always with the newest text.
type liveStream struct {
	rs   ReplyStream
	live *Live

	mu     sync.Mutex
	latest string
	shown  string
	wake   chan struct{}
	quit   chan struct{}
	done   chan struct{}
	ids    []string
}

func newLiveStream(ctx context.Context, rs ReplyStream, l *Live) *liveStream {
	s := &liveStream{rs: rs, live: l, wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go s.run(context.WithoutCancel(ctx), ctx.Done())
	return s
}

func (s *liveStream) set(text string) {
	s.mu.Lock()
	s.latest = text
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// stop ends the goroutine (an in-flight Show finishes first) and hands the
// stream over.
func (s *liveStream) stop() ReplyStream {
	close(s.quit)
	<-s.done
	return s.rs
}

func (s *liveStream) run(ctx context.Context, cancelled <-chan struct{}) {
	defer close(s.done)
	var next time.Time
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-s.wake:
		case <-s.quit:
			return
		case <-cancelled:
			return
		}
		if d := time.Until(next); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-s.quit:
				return
			case <-cancelled:
				return
			}
		}
		s.mu.Lock()
		text := s.latest
		s.mu.Unlock()
		if text == s.shown {
			continue
		}
		ids, err := s.rs.Show(ctx, text)
		if wait, ok := RetryAfterOf(err); ok {
			next = time.Now().Add(wait)
			s.poke()
			continue
		}
		if err != nil {
			s.live.log.Warn().Err(err).Str("chatKey", s.live.req.ChatKey).Msg("showing a reply while it is written; the rest goes when it is done")
			return
		}
		s.shown = text
		next = time.Now().Add(s.rs.Interval())
		if !slices.Equal(ids, s.ids) {
			s.ids = slices.Clone(ids)
			if s.live.visible != nil {
				if err := s.live.visible(ids); err != nil {
					// What is shown but not recorded cannot be cleaned up by
					// whoever takes the run over: show no more of it (the
					// send at the end finishes or removes it).
					s.live.log.Error().Err(err).Str("chatKey", s.live.req.ChatKey).Msg("journal: recording a streamed reply's messages; showing no more of it")
					return
				}
			}
		}
	}
}

// poke makes the loop go round again (after a pause) without new text.
func (s *liveStream) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}
