package server_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shipmyagent/ship/server"
)

// A draining server refuses new work with 503 and Retry-After, says so on
// /health for load balancers, keeps the read-only routes open, and still
// answers the request whose turn was already running.
func TestDrainRefusesNewWorkAndFinishesTheRunningTurn(t *testing.T) {
	g := newGate()
	var webhookCalls atomic.Int32
	e := newEnv(t, setup{handler: g.handler, opts: func(o *server.Options) {
		o.Console = true
		o.Webhooks = map[string]http.Handler{"POST /webhook/test": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			webhookCalls.Add(1)
		})}
	}})
	running := make(chan response, 1)
	go func() {
		r, err := e.do(t.Context(), http.MethodPost, "/api/execute", []byte(`{"instructions":"slow one","chatId":"d1"}`), nil)
		if err != nil {
			t.Errorf("the running request: %v", err)
		}
		running <- r
	}()
	g.waitEntered(t)

	e.api.Drain(2500 * time.Millisecond)
	if !e.api.Draining() {
		t.Error("Draining() is false after Drain")
	}
	h := e.get("/health")
	if h.status != http.StatusServiceUnavailable || h.json(t)["status"] != "draining" {
		t.Errorf("/health while draining: %d %s", h.status, h.body)
	}
	for _, c := range []struct{ path, body string }{
		{"/api/execute", `{"instructions":"new one","chatId":"d2"}`},
		{"/api/send", `{"userMessageId":"u-9","message":"new send","chatId":"d3"}`},
		{"/webhook/test", `{}`},
	} {
		r := e.request(http.MethodPost, c.path, []byte(c.body), nil)
		if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") != "3" {
			t.Errorf("POST %s while draining: %d, Retry-After %q; want 503 and 3", c.path, r.status, r.header.Get("Retry-After"))
		}
		if code := r.errorCode(t); code != "SHUTTING_DOWN" {
			t.Errorf("POST %s: code %s", c.path, code)
		}
	}
	c := e.request(http.MethodPost, "/console/send", []byte("chat=api%3Achat%3Aconsole&text=hi"), map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	if c.status != http.StatusServiceUnavailable || c.header.Get("Retry-After") != "3" || !contains(string(c.body), "draining") {
		t.Errorf("the console's send while draining: %d %q", c.status, c.body)
	}
	if n := webhookCalls.Load(); n != 0 {
		t.Errorf("the webhook handler ran %d times while draining", n)
	}
	if s := e.get("/api/status"); s.status != http.StatusOK {
		t.Errorf("/api/status while draining: %d", s.status)
	}

	g.open()
	select {
	case r := <-running:
		if res := r.result(t); !contains(res.Output+fmtReplies(res.Replies), "slow one") {
			t.Errorf("the running turn's answer %+v does not echo its message", res)
		}
	case <-waitTimeout():
		t.Fatal("the running request was never answered")
	}
	for _, entry := range e.entries("api:chat:d2") {
		t.Errorf("a refused message reached the chat log: %+v", entry)
	}
}

func fmtReplies(rs []string) string {
	out := ""
	for _, r := range rs {
		out += r + "\n"
	}
	return out
}
