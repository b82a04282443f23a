package qq_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/adapters/qq"
	"github.com/shipmyagent/ship/internal/adaptertest"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/fakeqq"
	"github.com/shipmyagent/ship/internal/logbuf"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/media"
	"github.com/shipmyagent/ship/runtime/stt"
)

// These tests run one after another (none calls t.Parallel): botgo keeps
// its base URLs per process, and every test points them at its own fake
// (see botgoseam.go). Each test stops its adapter and engine before the
// next starts.

const (
	appID     = "102030405"
	appSecret = "qq-app-secret-never-logged-0123456789"
)

type env struct {
	t       *testing.T
	dir     string
	qq      *fakeqq.Server
	model   *fakeopenai.Server
	engine  *engine.Engine
	adapter *qq.Adapter
	logs    *logbuf.Buffer
	runErr  chan error
	stop    func()
}

type setup struct {
	dir     string // reuse a project folder (restart)
	qq      *fakeqq.Server
	fake    fakeqq.Options
	model   fakeopenai.Handler
	opts    func(*qq.Options)
	noStart bool
	// vision shows images to the model; stt transcribes voice through
	// the fake model's transcription endpoint; maxFile caps one file.
	vision  bool
	stt     bool
	maxFile int64
	// engine adjusts the engine's options (cluster claims).
	engine func(*engine.Options)
}

// newFake starts a fake QQ. Its heartbeat interval is longer than any test:
// botgo's websocket client reads session.LastSeq for a heartbeat in one of
// its goroutines while another of its goroutines writes it, a race inside
// botgo (harmless: at worst a stale seq in a heartbeat) that -race would
// otherwise report. fakeqq's own tests cover heartbeats.
func newFake(t *testing.T, o fakeqq.Options) *fakeqq.Server {
	t.Helper()
	o.AppID, o.AppSecret = appID, appSecret
	if o.HeartbeatInterval == 0 {
		o.HeartbeatInterval = time.Hour
	}
	s, err := fakeqq.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// newEnv wires the real engine, the real botgo clients and the fakes: QQ
// and an OpenAI-compatible model.
func newEnv(t *testing.T, s setup) *env {
	t.Helper()
	e := &env{t: t, dir: s.dir, qq: s.qq, logs: &logbuf.Buffer{}}
	if e.dir == "" {
		e.dir = t.TempDir()
	}
	if e.qq == nil {
		e.qq = newFake(t, s.fake)
	}
	log := zerolog.New(e.logs)
	e.engine, e.model = adaptertest.NewEngine(t, e.dir, s.model, log, func(o *engine.Options) {
		o.Vision = s.vision
		if s.engine != nil {
			s.engine(o)
		}
	})
	md := &adapters.Media{Files: media.NewStore(e.dir, s.maxFile), Log: log}
	if s.stt {
		cl, err := stt.New(stt.Config{BaseURL: e.model.BaseURL()})
		if err != nil {
			t.Fatal(err)
		}
		md.STT = cl
	}
	opts := qq.Options{
		Media: md,
		AppID: appID, AppSecret: appSecret, APIBase: e.qq.URL(), TokenBase: e.qq.URL(),
		ReconnectBackoff: 10 * time.Millisecond, RetryBase: time.Millisecond,
		Host: e.engine, Logger: log,
	}
	if s.opts != nil {
		s.opts(&opts)
	}
	a, err := qq.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.engine.Register(a.Name(), a)
	e.adapter = a
	if !s.noStart {
		e.start()
	}
	t.Cleanup(func() {
		e.shutdown()
		if l := e.logs.String(); strings.Contains(l, appSecret) || strings.Contains(l, "QQBot tok-") {
			t.Errorf("a secret appears in the logs")
		}
		if t.Failed() {
			t.Logf("ship logs:\n%s", e.logs.String())
		}
	})
	return e
}

// start runs the adapter until shutdown.
func (e *env) start() {
	ctx, cancel := context.WithCancel(context.Background())
	e.runErr = make(chan error, 1)
	go func() { e.runErr <- e.adapter.Run(ctx) }()
	var once sync.Once
	e.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-e.runErr; err != nil {
				e.t.Errorf("adapter stopped with error: %v", err)
			}
		})
	}
}

// shutdown stops the adapter, then the engine, as ship's shutdown does.
func (e *env) shutdown() {
	if e.stop != nil {
		e.stop()
	}
	_, _ = e.engine.Close(context.Background())
}

func (e *env) ctx() context.Context { return adaptertest.Ctx(e.t) }

// waitSent waits for n messages in total from the bot.
func (e *env) waitSent(n int) []fakeqq.Sent {
	e.t.Helper()
	sent, err := e.qq.WaitSent(e.ctx(), n)
	if err != nil {
		e.t.Fatalf("waiting for %d sent messages: %v (got %d: %+v)", n, err, len(sent), sent)
	}
	return sent
}

func (e *env) entries(key string) []chat.ChatLogEntryV1 {
	return adaptertest.Entries(e.t, e.engine, key)
}

// until polls cond, for states that leave no event to wait on.
func (e *env) until(what string, cond func() bool) { adaptertest.WaitFor(e.t, what, cond) }

// waitModelCalls waits until the model was called n times and the queue is
// idle again.
func (e *env) waitModelCalls(n int) {
	e.t.Helper()
	e.until("model calls", func() bool { return e.model.RequestCount() >= n })
	e.idle()
}

// idle waits until every message that was going to run has run.
func (e *env) idle() { adaptertest.Idle(e.t, e.engine) }

// newWebhookServer serves WebhookPath like ship's HTTP server does.
func newWebhookServer(t *testing.T, h http.Handler) string {
	mux := http.NewServeMux()
	mux.Handle("POST "+qq.WebhookPath, h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + qq.WebhookPath
}

// userTexts is the text of every user entry in a chat's log.
func (e *env) userTexts(key string) []string {
	var out []string
	for _, en := range e.entries(key) {
		if en.Role == chat.RoleUser {
			out = append(out, en.Text)
		}
	}
	return out
}
