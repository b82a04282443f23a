package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/server"
)

// ship is the address the handler tests send their requests to.
const ship = "http://127.0.0.1:3000"

// startSignal records an answer and says when it was first flushed: an
// event stream flushes its header once it is subscribed.
type startSignal struct {
	*httptest.ResponseRecorder
	once    sync.Once
	started chan struct{}
}

func (s *startSignal) Flush() {
	s.ResponseRecorder.Flush()
	s.once.Do(func() { close(s.started) })
}

// heldStream is a request served in the background, as a client that
// keeps an event stream open.
type heldStream struct {
	cancel context.CancelFunc
	done   chan struct{}
	rec    *startSignal
}

// hold sends a request to the handler from remote, addressed to target,
// and returns once the server answered: granted when an event stream
// started, else the answer, read in full.
func (e *env) hold(remote, method, target, body string, header map[string]string) (h *heldStream, granted bool, answer response) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequestWithContext(ctx, method, target, strings.NewReader(body))
	req.RemoteAddr = remote
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	h = &heldStream{cancel: cancel, done: make(chan struct{}),
		rec: &startSignal{ResponseRecorder: httptest.NewRecorder(), started: make(chan struct{})}}
	go func() {
		defer close(h.done)
		e.api.Handler().ServeHTTP(h.rec, req)
	}()
	e.t.Cleanup(h.close)
	select {
	case <-h.rec.started:
		return h, true, response{}
	case <-h.done:
		return h, false, response{status: h.rec.Code, header: h.rec.Header(), body: h.rec.Body.Bytes()}
	case <-waitTimeout():
		e.t.Fatalf("hang guard: %s %s was never answered", method, target)
		return nil, false, response{}
	}
}

// wait waits until the server ends the stream by itself.
func (h *heldStream) wait(t *testing.T) {
	t.Helper()
	select {
	case <-h.done:
	case <-waitTimeout():
		t.Fatal("hang guard: the stream never ended")
	}
}

// close hangs up and waits until the server is done with the request.
func (h *heldStream) close() {
	h.cancel()
	<-h.done
}

// wantRefused checks a refusal for too many streams and that it names
// the limit that was hit.
func wantRefused(t *testing.T, what string, granted bool, r response, says string) {
	t.Helper()
	if granted {
		t.Errorf("%s: the stream was opened, want 503", what)
		return
	}
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" ||
		r.errorCode(t) != "TOO_MANY_STREAMS" || !contains(r.message(t), says) {
		t.Errorf("%s: %d Retry-After=%q %s, want 503 TOO_MANY_STREAMS saying %q", what, r.status, r.header.Get("Retry-After"), r.body, says)
	}
}

func TestEventStreamsAreCappedPerClientAndInAll(t *testing.T) {
	e := newEnv(t, setup{handler: fakeopenai.EchoChatSend, opts: func(o *server.Options) {
		o.SSEMaxPerClient, o.SSEMaxTotal = 2, 3
	}})
	const alice, bob = "127.0.0.1", "127.0.0.2"
	a1, ok, r := e.hold(alice+":1001", http.MethodGet, ship+"/api/sse", "", nil)
	if !ok {
		t.Fatalf("alice's first stream: %d %s", r.status, r.body)
	}
	a2, ok, r := e.hold(alice+":1002", http.MethodGet, ship+"/api/sse/api:chat:x", "", nil)
	if !ok {
		t.Fatalf("alice's second stream: %d %s", r.status, r.body)
	}
	// Another port of the same address is the same client.
	_, ok, r = e.hold(alice+":1003", http.MethodGet, ship+"/api/sse", "", nil)
	wantRefused(t, "alice's third stream", ok, r, "this address has reached the limit of 2 open event streams")

	b1, ok, r := e.hold(bob+":2001", http.MethodGet, ship+"/api/sse", "", nil)
	if !ok {
		t.Fatalf("bob's first stream, with alice at her limit: %d %s", r.status, r.body)
	}
	_, ok, r = e.hold(bob+":2002", http.MethodGet, ship+"/api/sse", "", nil)
	wantRefused(t, "bob's second stream, with the server at its limit", ok, r, "the server has reached its limit of 3 open event streams")

	// A stream that ends gives its slot back.
	a1.close()
	a3, ok, r := e.hold(alice+":1004", http.MethodGet, ship+"/api/sse", "", nil)
	if !ok {
		t.Fatalf("alice's stream after she closed one: %d %s", r.status, r.body)
	}

	// Shutdown ends every stream, and none leaves its subscription behind.
	e.api.CloseStreams()
	for _, h := range []*heldStream{a2, a3, b1} {
		h.wait(t)
	}
	if n := e.engine.Subscribers(); n != 0 {
		t.Errorf("%d subscriptions left after every stream ended", n)
	}
}

func TestStreamedTurnsAndTheConsolesEventsCountAsStreams(t *testing.T) {
	e := newEnv(t, setup{handler: fakeopenai.EchoChatSend, opts: func(o *server.Options) {
		o.Console = true
		o.SSEMaxPerClient = 1
	}})
	const client = "127.0.0.1:1001"
	held, ok, r := e.hold(client, http.MethodGet, ship+"/api/sse", "", nil)
	if !ok {
		t.Fatalf("the first stream: %d %s", r.status, r.body)
	}
	streamed := map[string]string{"Accept": "text/event-stream"}
	_, ok, r = e.hold(client, http.MethodPost, ship+"/api/execute", `{"instructions":"streamed"}`, streamed)
	wantRefused(t, "a streamed turn", ok, r, "this address")
	if calls, logged := e.fake.RequestCount(), len(e.entries("api:chat:default")); calls != 0 || logged != 0 {
		t.Fatalf("a refused streamed turn ran: %d model calls, %d chat log entries", calls, logged)
	}
	_, ok, r = e.hold(client, http.MethodGet, ship+"/console/events", "", nil)
	wantRefused(t, "the console's live updates", ok, r, "this address")

	held.close()
	turn, ok, r := e.hold(client, http.MethodPost, ship+"/api/execute", `{"instructions":"streamed"}`, streamed)
	if !ok {
		t.Fatalf("a streamed turn after the stream closed: %d %s", r.status, r.body)
	}
	turn.wait(t) // the stream ends after the run's final event
	if n := e.fake.RequestCount(); n == 0 {
		t.Error("the streamed turn never reached the model")
	}
	if _, ok, r := e.hold(client, http.MethodGet, ship+"/console/events", "", nil); !ok {
		t.Errorf("the console's live updates after the turn: %d %s", r.status, r.body)
	}
}

func TestTooManyStreamsOverHTTP(t *testing.T) {
	e := newEnv(t, setup{handler: fakeopenai.EchoChatSend, opts: func(o *server.Options) { o.SSEMaxPerClient = 1 }})
	e.subscribe("/api/sse", nil)
	r := e.open("/api/sse", nil)
	wantRefused(t, "a second stream from 127.0.0.1", false, r, "this address has reached the limit of 1 open event streams")
}
