package feishu_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/adapters/feishu"
	"github.com/shipmyagent/ship/internal/adaptertest"
	"github.com/shipmyagent/ship/internal/fakelark"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/logbuf"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/media"
	"github.com/shipmyagent/ship/runtime/stt"
)

const (
	appSecret  = "app-secret-never-logged"
	encryptKey = "encrypt-key-never-logged"
	verifyTok  = "verification-token-1"
)

type env struct {
	t       *testing.T
	dir     string
	lk      *fakelark.Server
	model   *fakeopenai.Server
	engine  *engine.Engine
	adapter *feishu.Adapter
	hookURL string // webhook mode: where the adapter listens
	logs    *logbuf.Buffer
	stop    func()
}

type setup struct {
	dir     string           // reuse a project folder (restart)
	lk      *fakelark.Server // reuse a platform (restart)
	model   fakeopenai.Handler
	mode    string
	opts    func(*feishu.Options)
	noStart bool
	// vision shows images to the model; stt transcribes voice through
	// the fake model's transcription endpoint; maxFile caps one file.
	vision  bool
	stt     bool
	maxFile int64
}

// newEnv wires the real engine, the real oapi-sdk-go clients and the fakes:
// the Feishu open platform and an OpenAI-compatible model.
func newEnv(t *testing.T, s setup) *env {
	t.Helper()
	e := &env{t: t, dir: s.dir, lk: s.lk, logs: &logbuf.Buffer{}}
	if e.dir == "" {
		e.dir = t.TempDir()
	}
	if e.lk == nil {
		lk, err := fakelark.Start(fakelark.Options{AppID: "cli_ship", AppSecret: appSecret, VerificationToken: verifyTok})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(lk.Close)
		e.lk = lk
	}
	log := zerolog.New(e.logs).Level(zerolog.DebugLevel)
	e.engine, e.model = adaptertest.NewEngine(t, e.dir, s.model, log, func(o *engine.Options) { o.Vision = s.vision })
	md := &adapters.Media{Files: media.NewStore(e.dir, s.maxFile), Log: log}
	if s.stt {
		cl, err := stt.New(stt.Config{BaseURL: e.model.BaseURL()})
		if err != nil {
			t.Fatal(err)
		}
		md.STT = cl
	}
	opts := feishu.Options{
		Media: md,
		AppID: e.lk.AppID(), AppSecret: appSecret, Domain: e.lk.URL(), Mode: s.mode,
		VerificationToken: verifyTok, EncryptKey: encryptKey,
		CacheDir: filepath.Join(e.dir, ".ship", ".cache", "feishu"),
		Limits:   feishu.Limits{RetryBase: time.Millisecond},
		Host:     e.engine, Logger: log,
	}
	if s.opts != nil {
		s.opts(&opts)
	}
	a, err := feishu.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.engine.Register(a.Name(), a)
	e.adapter = a
	if opts.Mode == feishu.ModeWebhook {
		mux := http.NewServeMux()
		mux.Handle("POST "+feishu.WebhookPath, a)
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		e.hookURL = srv.URL + feishu.WebhookPath
	}
	if !s.noStart {
		e.start()
	}
	t.Cleanup(func() {
		e.shutdown()
		logs := e.logs.String()
		if strings.Contains(logs, appSecret) || strings.Contains(logs, encryptKey) {
			t.Errorf("a secret appears in the logs")
		}
		if t.Failed() {
			t.Logf("ship logs:\n%s", logs)
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

// push delivers ev over the websocket and waits for the adapter's ack.
func (e *env) push(ev fakelark.Event) {
	e.t.Helper()
	ack, err := e.lk.PushEvent(e.ctx(), ev)
	if err != nil || ack.Code != http.StatusOK {
		e.t.Fatalf("push %s: ack %d %s, %v", ev.EventID, ack.Code, ack.Payload, err)
	}
}

// waitSent waits for n messages in total from the bot.
func (e *env) waitSent(n int) []fakelark.Sent {
	e.t.Helper()
	sent, err := e.lk.WaitSent(e.ctx(), n)
	if err != nil {
		e.t.Fatalf("waiting for %d sent messages: %v (got %d)", n, err, len(e.lk.Sent()))
	}
	return sent
}

func (e *env) entries(key string) []chat.ChatLogEntryV1 {
	return adaptertest.Entries(e.t, e.engine, key)
}

// waitFor polls cond, for states that leave no event to wait on.
func (e *env) waitFor(what string, cond func() bool) { adaptertest.WaitFor(e.t, what, cond) }

// waitModelCalls waits until the model was called n times and the queue is
// idle again.
func (e *env) waitModelCalls(n int) {
	e.t.Helper()
	e.waitFor("model calls", func() bool { return e.model.RequestCount() >= n })
	e.idle()
}

// idle waits until every message that was going to run has run.
func (e *env) idle() { adaptertest.Idle(e.t, e.engine) }

// waitRunning waits until the adapter knows its bot and serves events.
func (e *env) waitRunning() {
	e.t.Helper()
	e.waitFor("the adapter to run", func() bool { return e.adapter.Status().State == "running" })
}
