package telegram_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/time/rate"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/adapters/telegram"
	"github.com/shipmyagent/ship/internal/adaptertest"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/faketelegram"
	"github.com/shipmyagent/ship/internal/logbuf"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/media"
	"github.com/shipmyagent/ship/runtime/stt"
)

const (
	token  = "123456:TEST-token-never-logged"
	sttKey = "sk-stt-key-never-logged"
)

type env struct {
	t       *testing.T
	dir     string
	tg      *faketelegram.Server
	model   *fakeopenai.Server
	engine  *engine.Engine
	adapter *telegram.Adapter
	logs    *logbuf.Buffer
	stop    func()
}

type setup struct {
	dir     string // reuse a project folder (restart)
	tg      *faketelegram.Server
	model   fakeopenai.Handler
	mode    string
	opts    func(*telegram.Options)
	noStart bool
	// vision shows images to the model; stt transcribes voice through
	// the fake model's transcription endpoint; maxFile caps one file.
	vision  bool
	stt     bool
	maxFile int64
	// engine changes the engine's options (the per-sender limit, say).
	engine func(*engine.Options)
}

// newEnv wires the real engine, the real tgbotapi client and the fakes: a
// Telegram Bot API and an OpenAI-compatible model.
func newEnv(t *testing.T, s setup) *env {
	t.Helper()
	e := &env{t: t, dir: s.dir, tg: s.tg, logs: &logbuf.Buffer{}}
	if e.dir == "" {
		e.dir = t.TempDir()
	}
	if e.tg == nil {
		tg, err := faketelegram.Start(faketelegram.Options{Token: token})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tg.Close)
		e.tg = tg
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
		cl, err := stt.New(stt.Config{BaseURL: e.model.BaseURL(), APIKey: sttKey})
		if err != nil {
			t.Fatal(err)
		}
		md.STT = cl
	}
	opts := telegram.Options{
		Media: md,
		Token: token, APIBase: e.tg.URL(), Mode: s.mode, RequireMention: true,
		CacheDir:    filepath.Join(e.dir, ".ship", ".cache", "telegram"),
		PollTimeout: 2 * time.Second,
		Limits:      telegram.Limits{PerChat: rate.Inf, PerGroup: rate.Inf, Global: rate.Inf, RetryBase: time.Millisecond},
		Host:        e.engine, Logger: log,
	}
	if s.opts != nil {
		s.opts(&opts)
	}
	a, err := telegram.New(opts)
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
		if strings.Contains(e.logs.String(), token) {
			t.Errorf("the bot token appears in the logs")
		}
		if strings.Contains(e.logs.String(), sttKey) {
			t.Errorf("the speech-to-text key appears in the logs")
		}
		if t.Failed() {
			t.Logf("ship logs:\n%s", e.logs.String())
		}
	})
	return e
}

// start runs the adapter until shutdown.
func (e *env) start() { e.stop = adaptertest.Run(e.t, e.adapter) }

// shutdown stops the adapter, then the engine, as ship's shutdown does.
func (e *env) shutdown() {
	if e.stop != nil {
		e.stop()
	}
	_, _ = e.engine.Close(context.Background())
}

func (e *env) ctx() context.Context { return adaptertest.Ctx(e.t) }

// waitSent waits for n messages in total from the bot.
func (e *env) waitSent(n int) []faketelegram.Sent {
	e.t.Helper()
	sent, err := e.tg.WaitSent(e.ctx(), n)
	if err != nil {
		e.t.Fatalf("waiting for %d sent messages: %v (got %d)", n, err, len(e.tg.Sent()))
	}
	return sent
}

func (e *env) entries(key string) []chat.ChatLogEntryV1 {
	return adaptertest.Entries(e.t, e.engine, key)
}

// waitModelCalls waits until the model was called n times and the queue is
// idle again, for runs that leave no other trace to wait on.
func (e *env) waitModelCalls(n int) {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second) // hang guard
	for e.model.RequestCount() < n {
		if time.Now().After(deadline) {
			e.t.Fatalf("model called %d times, waiting for %d", e.model.RequestCount(), n)
		}
		time.Sleep(time.Millisecond)
	}
	e.idle()
}

// idle waits until every message that was going to run has run.
func (e *env) idle() { adaptertest.Idle(e.t, e.engine) }

// newWebhookServer serves WebhookPath like ship's HTTP server does; route
// plugs the adapter in once it exists (its URL must be known first).
func newWebhookServer(t *testing.T) (*httptest.Server, func(http.Handler)) {
	var mu sync.Mutex
	var h http.Handler
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+telegram.WebhookPath, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		cur := h
		mu.Unlock()
		if cur == nil {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		cur.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, func(handler http.Handler) { mu.Lock(); h = handler; mu.Unlock() }
}

// waitWebhook waits until the adapter has called setWebhook.
func waitWebhook(t *testing.T, tg *faketelegram.Server) (url, secret string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // hang guard
	for {
		if url, secret = tg.Webhook(); url != "" {
			return url, secret
		}
		if time.Now().After(deadline) {
			t.Fatal("setWebhook never called")
		}
		time.Sleep(time.Millisecond)
	}
}
