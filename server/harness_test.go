package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/logbuf"
	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/jobs"
	"github.com/shipmyagent/ship/runtime/llm"
	"github.com/shipmyagent/ship/runtime/media"
	"github.com/shipmyagent/ship/runtime/metrics"
	"github.com/shipmyagent/ship/runtime/models"
	"github.com/shipmyagent/ship/runtime/policy"
	"github.com/shipmyagent/ship/runtime/questions"
	"github.com/shipmyagent/ship/runtime/queue"
	"github.com/shipmyagent/ship/runtime/records"
	"github.com/shipmyagent/ship/runtime/usage"
	"github.com/shipmyagent/ship/server"
	"github.com/shipmyagent/ship/tools"
)

// hangGuard bounds every wait so a broken test fails instead of hanging; it
// is never a timing assertion.
const hangGuard = 30 * time.Second

// testModelKey is the models' API key: it must never show in an answer.
const testModelKey = "sk-server-test-key-1234"

type setup struct {
	// userLimit is the per-sender limit (a fake clock in Now keeps a
	// burst test from depending on how fast the machine is).
	userLimit ingress.UserLimiterOptions
	handler   fakeopenai.Handler
	token     string
	capacity  int
	adapters  func() []server.AdapterStatus
	dir       string // reuse a project folder (restart); "" → new
	stream    bool   // the model streams (content arrives in pieces)
	opts      func(*server.Options)
	// tasks builds the scheduler the server lists, on the engine.
	tasks  func(*engine.Engine) server.TaskService
	policy *policy.Policy // the tool policy; nil: none
	exec   bool           // offer exec_shell (the policy still decides who gets it)
	// show offers chat_send_file and chat_ask (questions kept in memory)
	// and serves .ship/files, as the binary does.
	show bool
	// usage counts tokens; budget is limits.tokens.
	usage  *usage.Tally
	budget usage.Budget
	// metrics, when set, are counted by the engine and served at
	// /metrics.
	metrics *metrics.Set
	// jobs lets exec_shell run background jobs (with exec).
	jobs *jobs.Manager
}

// env is the core wired as in production (real ChatStore, queue, runtime,
// tools and langchaingo's OpenAI client against the loopback fake) with the
// API served over real HTTP.
type env struct {
	t      *testing.T
	fake   *fakeopenai.Server
	engine *engine.Engine
	srv    *httptest.Server
	logs   *logbuf.Buffer
	dir    string
	api    *server.Server
}

// stop shuts the process down as ship does: streams, HTTP, then the engine.
func (e *env) stop() {
	e.api.CloseStreams()
	e.srv.Close()
	_, _ = e.engine.Close(context.Background())
}

func newEnv(t *testing.T, o setup) *env {
	t.Helper()
	fake, err := fakeopenai.Start(o.handler)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	// Two models on the fake: "default" (model id m) and "fast" (m-fast).
	cat, err := models.New(llm.Config{Provider: llm.ProviderOpenAI, Model: "m", BaseURL: fake.BaseURL(), APIKey: testModelKey,
		Models: map[string]llm.Config{"fast": {Model: "m-fast"}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := o.dir
	if dir == "" {
		dir = t.TempDir()
	}
	// The engine and the server share one sink so tests can follow a
	// request id from the access line into the run's own lines.
	logs := &logbuf.Buffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", logs.String())
		}
	})
	toolset := tools.Default
	if o.exec {
		shell := tools.NewExecShell(tools.ExecShellOptions{Dir: dir, Secrets: []string{testModelKey}, Logger: zerolog.New(logs), Jobs: o.jobs})
		toolset = func(s chat.Log, d *dispatch.Deliverer) []agent.Tool { return append(tools.Default(s, d), shell) }
	}
	var qs *questions.Store
	var files *media.Store
	if o.show {
		qs = questions.New(records.NewMemory(), nil)
		files = media.NewStore(dir, tools.MaxKeptFileBytes)
		base := toolset
		toolset = func(s chat.Log, d *dispatch.Deliverer) []agent.Tool {
			return append(base(s, d),
				&tools.ChatSendFile{Deliverer: d, Dir: dir, Keep: files, Private: config.PrivateNames()},
				&tools.ChatAsk{Deliverer: d, Questions: qs})
		}
	}
	approvals := ""
	if o.exec {
		approvals = filepath.Join(dir, ".ship", "approvals.json")
	}
	eng, err := engine.New(engine.Options{
		Tools:         toolset,
		ApprovalsPath: approvals,
		ChatsDir:      filepath.Join(dir, ".ship", "chats"),
		Durability:    chat.DurabilityNone,
		Models:        cat,
		AgentMDPath:   filepath.Join(dir, "Agent.md"),
		Queue:         queue.Options{Capacity: o.capacity},
		UserLimit:     o.userLimit,
		RetryBackoff:  time.Millisecond,
		Stream:        o.stream,
		Policy:        func() *policy.Policy { return o.policy },
		Questions:     qs,
		Logger:        zerolog.New(logs),
		Usage:         o.usage, TokenBudget: o.budget,
		Metrics: o.metrics, Jobs: o.jobs,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = eng.Close(context.Background()) })

	opts := server.Options{
		Door:     eng,
		View:     eng,
		Token:    o.token,
		Version:  "1.2.3-test",
		Started:  time.Now(),
		Model:    "openai/m",
		Adapters: o.adapters,
		Files:    files,
		Logger:   zerolog.New(logs),
	}
	if o.tasks != nil {
		opts.Tasks = o.tasks(eng)
	}
	if o.metrics != nil {
		opts.Metrics = o.metrics.Handler()
	}
	if o.opts != nil {
		o.opts(&opts)
	}
	s, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(s.CloseStreams) // runs first: open streams would hold Close up
	return &env{t: t, fake: fake, engine: eng, srv: srv, logs: logs, dir: dir, api: s}
}

// response is an answer read in full.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body %q is not a JSON object: %v", r.body, err)
	}
	return m
}

// errorCode returns error.code and checks the error body's shape.
func (r response) errorCode(t *testing.T) string {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type = %q", ct)
	}
	var b struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &b); err != nil {
		t.Fatalf("error body %q: %v", r.body, err)
	}
	if b.Error.Code == "" || b.Error.Message == "" {
		t.Errorf("error body %q lacks code or message", r.body)
	}
	return b.Error.Code
}

func (r response) message(t *testing.T) string {
	t.Helper()
	return r.json(t)["error"].(map[string]any)["message"].(string)
}

// do sends a request with a raw body (nil for none) and extra headers.
func (e *env) do(ctx context.Context, method, path string, body []byte, header map[string]string) (response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.srv.URL+path, rd)
	if err != nil {
		return response{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, err
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

func (e *env) request(method, path string, body []byte, header map[string]string) response {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	r, err := e.do(ctx, method, path, body, header)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

func (e *env) get(path string) response { return e.request(http.MethodGet, path, nil, nil) }

func (e *env) execute(body any) response {
	e.t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.request(http.MethodPost, "/api/execute", b, nil)
}

// executeResult is the success body of /api/execute.
type executeResult struct {
	Success   bool   `json:"success"`
	Output    string `json:"output"`
	ToolCalls []struct {
		Tool   string         `json:"tool"`
		Input  map[string]any `json:"input"`
		Output string         `json:"output"`
	} `json:"toolCalls"`
	Replies   []string `json:"replies"`
	ChatKey   string   `json:"chatKey"`
	MessageID string   `json:"messageId"`
}

func (r response) result(t *testing.T) executeResult {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d, body %s", r.status, r.body)
	}
	var res executeResult
	if err := json.Unmarshal(r.body, &res); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
	return res
}

func (e *env) entries(chatKey string) []chat.ChatLogEntryV1 {
	e.t.Helper()
	var out []chat.ChatLogEntryV1
	if err := e.engine.Scan(context.Background(), chatKey, func(en chat.ChatLogEntryV1) bool {
		out = append(out, en)
		return true
	}); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// waitFor polls cond, for states that nothing signals (a queue's waiting
// count); the deadline is a hang guard only.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		<-tick.C
	}
}

// gate is a fake model that blocks every call until released, and says
// when a call has arrived.
type gate struct {
	entered chan string // the last user text of each blocked call
	release chan struct{}
	once    sync.Once
}

func newGate() *gate {
	return &gate{entered: make(chan string, 16), release: make(chan struct{})}
}

func (g *gate) handler(r fakeopenai.Request) fakeopenai.Response {
	if len(r.ToolResults()) == 0 {
		g.entered <- r.LastUser()
		<-g.release
	}
	return fakeopenai.EchoChatSend(r)
}

func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

func (g *gate) waitEntered(t *testing.T) string {
	t.Helper()
	select {
	case s := <-g.entered:
		return s
	case <-time.After(hangGuard):
		t.Fatal("the model was never called")
		return ""
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func waitTimeout() <-chan time.Time { return time.After(hangGuard) }
