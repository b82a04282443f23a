// Package adaptertest holds what every platform adapter's tests need around
// the adapter itself: running it until the test ends, hang-guarded waits,
// and reading the chat log. Like net/http/httptest, it is for tests only.
package adaptertest

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/events"
	"github.com/shipmyagent/ship/runtime/media"
	"github.com/shipmyagent/ship/tools"
)

// HangGuard bounds every wait so a broken test fails instead of hanging; it
// is never a timing assertion.
const HangGuard = 30 * time.Second

// NewEngine wires the real core in dir/.ship (no fsync, so tests stay
// fast) behind langchaingo's real OpenAI client talking to a loopback fake
// model scripted by handler (nil: echo through chat_send). Both close with
// the test. Each of options may change the engine's options before it
// starts (Vision, say).
func NewEngine(t testing.TB, dir string, handler fakeopenai.Handler, log zerolog.Logger, options ...func(*engine.Options)) (*engine.Engine, *fakeopenai.Server) {
	t.Helper()
	model, err := fakeopenai.Start(handler)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(model.Close)
	llm, err := openai.New(openai.WithBaseURL(model.BaseURL()), openai.WithToken("k"), openai.WithModel("m"))
	if err != nil {
		t.Fatal(err)
	}
	opts := engine.Options{
		ChatsDir: filepath.Join(dir, ".ship", "chats"), Durability: chat.DurabilityNone,
		Model: llm, ModelName: "fake/m", Tools: tools.Default, Logger: log, RetryBackoff: time.Millisecond,
		ApprovalsPath: filepath.Join(dir, ".ship", "approvals.json"), Files: media.NewStore(dir, 0),
	}
	for _, o := range options {
		o(&opts)
	}
	eng, err := engine.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return eng, model
}

// Run runs a until the returned stop is called (it is safe to call more
// than once); an error from Run fails the test.
func Run(t testing.TB, a adapters.Adapter) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := a.Run(ctx); err != nil {
			t.Errorf("%s adapter stopped with error: %v", a.Name(), err)
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { cancel(); wg.Wait() }) }
}

// Ctx is a context ending at the hang guard (or with the test).
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), HangGuard)
	t.Cleanup(cancel)
	return ctx
}

// WaitFor polls cond, for states that leave no event to wait on.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(HangGuard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("hang guard: still waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Idle waits until the queue has nothing waiting or running: every message
// that was going to run has run.
func Idle(t testing.TB, e *engine.Engine) {
	t.Helper()
	WaitFor(t, "an idle queue", func() bool {
		st := e.QueueStats()
		return st.Waiting == 0 && st.Running == 0
	})
}

// Entries returns a chat's whole log.
func Entries(t testing.TB, e *engine.Engine, chatKey string) []chat.ChatLogEntryV1 {
	t.Helper()
	var out []chat.ChatLogEntryV1
	if err := e.Scan(context.Background(), chatKey, func(en chat.ChatLogEntryV1) bool {
		out = append(out, en)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// Files returns the files a log entry lists in meta.files.
func Files(t testing.TB, e chat.ChatLogEntryV1) []media.File {
	t.Helper()
	files, err := media.FilesOf(e.Meta)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// RunEvents collects the events sub receives up to the one that ends a
// run (task_completed or error), which comes last.
func RunEvents(t testing.TB, sub *events.Subscription) []events.Event {
	t.Helper()
	ctx := Ctx(t)
	var evs []events.Event
	for {
		select {
		case ev, ok := <-sub.C:
			if !ok {
				t.Fatal("event subscription closed")
			}
			evs = append(evs, ev)
			if ev.Final() {
				return evs
			}
		case <-ctx.Done():
			t.Fatal("hang guard: no final run event")
		}
	}
}
