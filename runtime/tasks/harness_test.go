package tasks_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/tmc/langchaingo/llms/openai"
	"golang.org/x/time/rate"

	"github.com/shipmyagent/ship/adapters/telegram"
	"github.com/shipmyagent/ship/internal/adaptertest"
	"github.com/shipmyagent/ship/internal/fakeclock"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/faketelegram"
	"github.com/shipmyagent/ship/internal/logbuf"
	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/policy"
	"github.com/shipmyagent/ship/runtime/tasks"
	"github.com/shipmyagent/ship/tools"
)

const botToken = "123456:TASKS-token"

// env is ship's core as cmd/ship wires it, in process: the real engine
// (journal included) behind the real Telegram adapter and a fake Bot API,
// a fake model, and the scheduler on a hand-driven clock.
type env struct {
	t      *testing.T
	dir    string
	tg     *faketelegram.Server
	model  *fakeopenai.Server
	eng    *engine.Engine
	tgA    *telegram.Adapter
	sched  *tasks.Scheduler
	clock  *fakeclock.Clock
	logs   *logbuf.Buffer
	stopTG func()
	closed bool
}

type setup struct {
	dir    string               // reuse a project folder (restart)
	tg     *faketelegram.Server // reuse the Bot API (restart)
	model  *fakeopenai.Server   // reuse the model (restart)
	clock  *fakeclock.Clock
	policy string // the "tools" section of ship.json
}

func newEnv(t *testing.T, s setup) *env {
	t.Helper()
	e := &env{t: t, dir: s.dir, tg: s.tg, model: s.model, clock: s.clock, logs: &logbuf.Buffer{}}
	if e.dir == "" {
		e.dir = t.TempDir()
	}
	if e.tg == nil {
		tg, err := faketelegram.Start(faketelegram.Options{Token: botToken})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tg.Close)
		e.tg = tg
	}
	if e.model == nil {
		m, err := fakeopenai.Start(nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Close)
		e.model = m
	}
	if e.clock == nil {
		e.clock = fakeclock.New(time.Date(2026, 3, 4, 8, 0, 0, 0, time.UTC))
	}
	log := zerolog.New(e.logs)
	llm, err := openai.New(openai.WithBaseURL(e.model.BaseURL()), openai.WithToken("k"), openai.WithModel("m"))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse(json.RawMessage(s.policy))
	if err != nil {
		t.Fatal(err)
	}
	e.eng, err = engine.New(engine.Options{
		ChatsDir: filepath.Join(e.dir, ".ship", "chats"), JournalPath: filepath.Join(e.dir, ".ship", "pending.jsonl"),
		Durability: chat.DurabilityNone, Model: llm, ModelName: "fake/m", Logger: log, RetryBackoff: time.Millisecond,
		Policy: func() *policy.Policy { return pol },
		Tools: func(store chat.Log, d *dispatch.Deliverer) []agent.Tool {
			return append(tools.Default(store, d), tools.Tasks(tools.TaskToolsOptions{Dir: e.taskDir(), Local: time.UTC, Now: e.clock.Now})...)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	a, err := telegram.New(telegram.Options{
		Token: botToken, APIBase: e.tg.URL(), RequireMention: true,
		CacheDir: filepath.Join(e.dir, ".ship", ".cache", "telegram"), PollTimeout: 2 * time.Second,
		Limits: telegram.Limits{PerChat: rate.Inf, PerGroup: rate.Inf, Global: rate.Inf, RetryBase: time.Millisecond},
		Host:   e.eng, Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.eng.Register(a.Name(), a)
	e.tgA = a
	// The HTTP server's api dispatcher: nobody waits for a task's reply
	// there; it is in the chat log and on the event stream.
	e.eng.Register(chat.ChannelAPI, dispatch.DispatcherFunc(func(context.Context, dispatch.RequestContext, string) error { return nil }))
	e.sched, err = tasks.New(tasks.Options{Dir: e.taskDir(), Submitter: e.eng, History: e.eng, Dispatchers: e.eng, Clock: e.clock, Local: time.UTC, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	e.eng.Recover(context.Background())
	e.stopTG = adaptertest.Run(t, a)
	t.Cleanup(func() {
		e.close(context.Background())
		if t.Failed() {
			t.Logf("ship logs:\n%s", e.logs.String())
		}
	})
	return e
}

// close stops the adapter, then the engine, as ship's shutdown does; a
// cancelled ctx cuts the running item short, like a crash.
func (e *env) close(ctx context.Context) {
	if e.closed {
		return
	}
	e.closed = true
	e.stopTG()
	_, _ = e.eng.Close(ctx)
}

func (e *env) taskDir() string { return filepath.Join(e.dir, ".ship", "tasks") }

// writeTask writes a task file whose modification time is at (slots
// before it are not caught up).
func (e *env) writeTask(name, file string, at time.Time) {
	e.t.Helper()
	path := filepath.Join(e.taskDir(), name+".md")
	if err := os.MkdirAll(e.taskDir(), 0o700); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Chtimes(path, at, at); err != nil {
		e.t.Fatal(err)
	}
}

// say has a user write in a Telegram chat and waits for the bot's answer:
// the chat is then known to ship.
func (e *env) say(u faketelegram.Update) {
	e.t.Helper()
	before := len(e.tg.Sent())
	e.tg.Push(u)
	e.waitSent(before + 1)
	e.idle()
}

func (e *env) waitSent(n int) []faketelegram.Sent {
	e.t.Helper()
	sent, err := e.tg.WaitSent(adaptertest.Ctx(e.t), n)
	if err != nil {
		e.t.Fatalf("waiting for %d sent messages: %v (got %d)", n, err, len(e.tg.Sent()))
	}
	return sent
}

// idle waits until every queued run has run.
func (e *env) idle() { adaptertest.Idle(e.t, e.eng) }

// sentWith returns the bot's messages that contain text.
func (e *env) sentWith(text string) []faketelegram.Sent {
	var out []faketelegram.Sent
	for _, s := range e.tg.Sent() {
		if strings.Contains(s.Text, text) {
			out = append(out, s)
		}
	}
	return out
}

// status returns task name as the scheduler lists it.
func (e *env) status(name string) tasks.Status {
	e.t.Helper()
	list, err := e.sched.List(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	for _, s := range list {
		if s.Name == name {
			return s
		}
	}
	e.t.Fatalf("task %s not listed: %+v", name, list)
	return tasks.Status{}
}

// waitStatus waits until task name's last run has status want.
func (e *env) waitStatus(name, want string) tasks.Status {
	e.t.Helper()
	var st tasks.Status
	adaptertest.WaitFor(e.t, "task "+name+" status "+want, func() bool {
		st = e.status(name)
		return st.LastStatus == want
	})
	return st
}

// taskFile is a task file's text.
func taskFile(cron, chatKey, instruction string) string {
	return "---\ncron: \"" + cron + "\"\ntimezone: UTC\nchatKey: \"" + chatKey + "\"\n---\n" + instruction + "\n"
}

// await receives from ch within the hang guard.
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(adaptertest.HangGuard):
		t.Fatalf("hang guard: still waiting for %s", what)
		panic("unreachable")
	}
}
