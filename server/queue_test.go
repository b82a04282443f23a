package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/runtime/chat"
)

// asyncExecute posts a turn in the background and yields its answer.
func (e *env) asyncExecute(ctx context.Context, body string) <-chan response {
	out := make(chan response, 1)
	go func() {
		r, err := e.do(ctx, http.MethodPost, "/api/execute", []byte(body), nil)
		if err != nil {
			r = response{status: -1, body: []byte(err.Error())}
		}
		out <- r
	}()
	return out
}

func await(t *testing.T, ch <-chan response) response {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-waitTimeout():
		t.Fatal("no answer")
		return response{}
	}
}

func TestQueueFullAndStatus(t *testing.T) {
	g := newGate()
	e := newEnv(t, setup{handler: g.handler, capacity: 1})
	t.Cleanup(g.open) // runs before the servers close, so nothing stays blocked

	ctx := context.Background()
	running := e.asyncExecute(ctx, `{"instructions":"one","chatId":"a"}`)
	g.waitEntered(t)
	waiting := e.asyncExecute(ctx, `{"instructions":"two","chatId":"b"}`)
	waitFor(t, "the second turn to wait in the queue", func() bool {
		return e.engine.QueueStats().Waiting == 1
	})

	m := e.get("/api/status").json(t)
	q := m["queue"].(map[string]any)
	keys, _ := q["runningChatKeys"].([]any)
	if q["running"] != float64(1) || q["waiting"] != float64(1) || q["capacity"] != float64(1) ||
		len(keys) != 1 || keys[0] != "api:chat:a" {
		t.Errorf("queue while one runs and one waits = %v", q)
	}

	r := e.request(http.MethodPost, "/api/execute", []byte(`{"instructions":"three","chatId":"c"}`), nil)
	if r.status != http.StatusServiceUnavailable || r.errorCode(t) != "QUEUE_FULL" {
		t.Fatalf("third turn = %d %s, want 503 QUEUE_FULL", r.status, r.body)
	}
	if ra := r.header.Get("Retry-After"); ra != "5" {
		t.Errorf("Retry-After = %q", ra)
	}

	g.open()
	for _, ch := range []<-chan response{running, waiting} {
		if res := await(t, ch).result(t); len(res.Replies) != 1 {
			t.Errorf("queued turn answered with %+v", res)
		}
	}
}

func TestDuplicateMessageIDInFlight(t *testing.T) {
	g := newGate()
	e := newEnv(t, setup{handler: g.handler})
	t.Cleanup(g.open)

	first := e.asyncExecute(context.Background(), `{"instructions":"one","chatId":"a","messageId":"m1"}`)
	g.waitEntered(t)
	r := e.request(http.MethodPost, "/api/execute", []byte(`{"instructions":"again","chatId":"a","messageId":"m1"}`), nil)
	if r.status != http.StatusConflict || r.errorCode(t) != "CONFLICT" {
		t.Fatalf("duplicate = %d %s, want 409 CONFLICT", r.status, r.body)
	}
	// The same id in another chat is another message.
	other := e.asyncExecute(context.Background(), `{"instructions":"elsewhere","chatId":"b","messageId":"m1"}`)

	g.open()
	if res := await(t, first).result(t); len(res.Replies) != 1 || res.Replies[0] != "echo: one" {
		t.Errorf("first = %+v", res)
	}
	if res := await(t, other).result(t); len(res.Replies) != 1 || res.Replies[0] != "echo: elsewhere" {
		t.Errorf("other chat = %+v", res)
	}
	for _, en := range e.entries("api:chat:a") {
		if en.Text == "again" {
			t.Error("the refused duplicate was recorded")
		}
	}
	// Once the run has ended, a retry of the same id is refused too: it
	// would answer the message a second time.
	r = e.request(http.MethodPost, "/api/execute", []byte(`{"instructions":"later","chatId":"a","messageId":"m1"}`), nil)
	if r.status != http.StatusConflict || r.errorCode(t) != "CONFLICT" || !strings.Contains(string(r.body), "already received") {
		t.Errorf("reused id after the run = %d %s, want 409 CONFLICT", r.status, r.body)
	}
	for _, req := range e.fake.Requests() {
		if req.LastUser() == "later" {
			t.Error("the model was asked to answer the refused retry")
		}
	}
	for _, en := range e.entries("api:chat:a") {
		if en.Text == "later" {
			t.Error("the refused retry was recorded")
		}
	}
}

func TestClientGoneRunStillCompletes(t *testing.T) {
	g := newGate()
	e := newEnv(t, setup{handler: g.handler})
	t.Cleanup(g.open)

	ctx, cancel := context.WithCancel(context.Background())
	gone := e.asyncExecute(ctx, `{"instructions":"bye","chatId":"g"}`)
	g.waitEntered(t)
	cancel()
	if r := await(t, gone); r.status != -1 {
		t.Fatalf("cancelled request got an answer: %d", r.status)
	}
	g.open()
	waitFor(t, "the abandoned run's reply in the ChatStore", func() bool {
		for _, en := range e.entries("api:chat:g") {
			if en.Role == chat.RoleAssistant && en.Text == "echo: bye" {
				return true
			}
		}
		return false
	})
}
