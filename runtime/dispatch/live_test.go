package dispatch

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/chat"
)

// streamingChat is a platform that streams and types, recording the calls
// in order so tests can read what the chat went through.
type streamingChat struct {
	mu      sync.Mutex
	calls   []string
	resumes [][]string
	shown   chan string
	decline bool
}

func newStreamingChat() *streamingChat { return &streamingChat{shown: make(chan string, 100)} }

func (c *streamingChat) note(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, s)
}

func (c *streamingChat) log() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.calls)
}

func (c *streamingChat) SendText(_ context.Context, _ RequestContext, text string) error {
	c.note("send " + text)
	return nil
}

func (c *streamingChat) OpenStream(_ context.Context, _ RequestContext, resume []string) (ReplyStream, bool) {
	c.mu.Lock()
	c.resumes = append(c.resumes, resume)
	c.mu.Unlock()
	if c.decline {
		return nil, false
	}
	return &recordedStream{c: c, ids: resume}, true
}

func (c *streamingChat) StartTyping(context.Context, RequestContext) func(context.Context) {
	c.note("typing")
	return func(context.Context) { c.note("typing stopped") }
}

type recordedStream struct {
	c   *streamingChat
	ids []string
}

func (s *recordedStream) Show(_ context.Context, text string) ([]string, error) {
	s.c.note("show " + text)
	if len(s.ids) == 0 {
		s.ids = []string{"m1"}
	}
	s.c.shown <- text
	return s.ids, nil
}

func (s *recordedStream) Finish(_ context.Context, text string) (Delivery, error) {
	s.c.note("finish " + text)
	return Delivery{}, nil
}

func (s *recordedStream) Abandon(context.Context) error {
	s.c.note("abandon " + strings.Join(s.ids, ","))
	return nil
}

func (s *recordedStream) Interval() time.Duration { return time.Millisecond }

func liveSetup(t *testing.T, c *streamingChat, opts LiveOptions) (context.Context, *Live, *Deliverer) {
	t.Helper()
	store, err := chat.OpenStore(chat.StoreOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	reg := NewRegistry()
	reg.Register("test", c)
	req := RequestContext{Channel: "test", ChatID: "1", ChatKey: "test:1", MessageID: "9"}
	ctx := WithRequest(context.Background(), req)
	opts.Logger = zerolog.Nop()
	l := NewLive(ctx, reg, req, opts)
	return WithLive(ctx, l), l, &Deliverer{Registry: reg, Store: store}
}

func TestChatSendIsShownWhileWrittenThenFinishedInPlace(t *testing.T) {
	c := newStreamingChat()
	var visible [][]string
	ctx, l, d := liveSetup(t, c, LiveOptions{Visible: func(ids []string) error { visible = append(visible, ids); return nil }})
	var rt ReplyTexts
	feed(ctx, l, &rt, 1, 0, ChatSendTool, `{"text":"Hel`)
	if got := <-c.shown; got != "Hel" {
		t.Fatalf("first shown %q", got)
	}
	feed(ctx, l, &rt, 1, 0, ChatSendTool, `lo there"}`)
	l.ToolCall(1, ChatSendTool)
	if err := d.Deliver(ctx, "Hello there", ViaChatSend); err != nil {
		t.Fatal(err)
	}
	l.Close(ctx, false)
	got := c.log()
	if got[0] != "typing" || got[len(got)-1] != "finish Hello there" || got[len(got)-2] != "typing stopped" {
		t.Errorf("the chat went through %q; want typing, the reply shown, typing stopped, then finished", got)
	}
	for _, s := range got {
		if strings.HasPrefix(s, "send ") || strings.HasPrefix(s, "abandon") {
			t.Errorf("%q: a streamed reply is finished in place, never sent again or removed", s)
		}
	}
	if len(visible) != 1 || visible[0][0] != "m1" {
		t.Errorf("the journal heard %v, want the message once", visible)
	}
	recent, err := d.Store.Recent(ctx, "test:1", 10)
	if err != nil || len(recent) != 1 || recent[0].Text != "Hello there" {
		t.Errorf("chat log holds %+v (%v); want one assistant entry with the reply", recent, err)
	}
}

func TestOtherToolsAndOtherCallsAreNotStreamed(t *testing.T) {
	c := newStreamingChat()
	ctx, l, d := liveSetup(t, c, LiveOptions{})
	var rt ReplyTexts
	feed(ctx, l, &rt, 1, 0, "exec_shell", `{"text":"ls"}`)
	l.ToolCall(1, "exec_shell")
	l.ToolCall(1, ChatSendTool) // call 1 of the step, never streamed
	if err := d.Deliver(ctx, "done", ViaChatSend); err != nil {
		t.Fatal(err)
	}
	l.Close(ctx, false)
	if got := c.log(); !slices.Contains(got, "send done") || slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "show") }) {
		t.Errorf("the chat went through %q; want the reply sent whole", got)
	}
}

func TestResumedRunFinishesTheMessagesItTakesOver(t *testing.T) {
	c := newStreamingChat()
	ctx, l, d := liveSetup(t, c, LiveOptions{Resume: []string{"41", "42"}})
	if err := d.Deliver(ctx, "the whole answer", ViaFallback); err != nil {
		t.Fatal(err)
	}
	l.Close(ctx, false)
	if len(c.resumes) != 1 || !slices.Equal(c.resumes[0], []string{"41", "42"}) {
		t.Errorf("streams opened with %v, want the interrupted run's messages once", c.resumes)
	}
	if got := c.log(); !slices.Contains(got, "finish the whole answer") || slices.Contains(got, "send the whole answer") {
		t.Errorf("the chat went through %q; want the taken-over messages finished, nothing sent anew", got)
	}
}

func TestUnfinishedStreamIsRemovedUnlessTheRunResumes(t *testing.T) {
	for _, keep := range []bool{false, true} {
		c := newStreamingChat()
		ctx, l, _ := liveSetup(t, c, LiveOptions{})
		var rt ReplyTexts
		feed(ctx, l, &rt, 1, 0, ChatSendTool, `{"text":"half`)
		<-c.shown
		l.Close(ctx, keep)
		removed := slices.Contains(c.log(), "abandon m1")
		if removed == keep {
			t.Errorf("keep=%v: removed=%v; a run that ends without delivering removes its half reply, one cut short by shutdown leaves it for the resumed run", keep, removed)
		}
	}
}

func TestAChatThatDeclinesStreamingGetsWholeReplies(t *testing.T) {
	c := newStreamingChat()
	c.decline = true
	ctx, l, d := liveSetup(t, c, LiveOptions{})
	var rt ReplyTexts
	feed(ctx, l, &rt, 1, 0, ChatSendTool, `{"text":"a`)
	feed(ctx, l, &rt, 1, 0, ChatSendTool, `bc"}`)
	l.ToolCall(1, ChatSendTool)
	if err := d.Deliver(ctx, "abc", ViaChatSend); err != nil {
		t.Fatal(err)
	}
	if len(c.resumes) != 1 {
		t.Errorf("asked to stream %d times, want once", len(c.resumes))
	}
	if got := c.log(); !slices.Contains(got, "send abc") {
		t.Errorf("the chat went through %q; want the reply sent whole", got)
	}
}

// feed hands a piece of a call's streamed arguments to l as the runner
// does: decoded once (by rt) into the reply's text so far.
func feed(ctx context.Context, l *Live, rt *ReplyTexts, step, idx int, tool, piece string) {
	if text, ok := rt.Feed(step, idx, tool, piece); ok {
		l.Writing(ctx, step, idx, text)
	}
}
