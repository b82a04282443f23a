package shipclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// testTimeout bounds every call; reaching it means a hang, not slowness.
const testTimeout = 15 * time.Second

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func newTestClient(t *testing.T, url, token string) *Client {
	t.Helper()
	c, err := New(Options{BaseURL: url, Token: token, HTTPClient: &http.Client{}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// sseServer answers POST /api/execute with the frames, after checking the
// request the way ship does.
func sseServer(t *testing.T, frames ...string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/execute" || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Accept") != "text/event-stream" {
			t.Errorf("Accept = %q", r.Header.Get("Accept"))
		}
		var body map[string]string
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body["instructions"] != "hi" || body["chatId"] != "c1" {
			t.Errorf("body = %v (%v)", body, err)
		}
		if id := body["messageId"]; !strings.HasPrefix(id, "chat-") || r.Header.Get("Idempotency-Key") != id {
			t.Errorf("messageId %q, Idempotency-Key %q: want the same chat-… id", id, r.Header.Get("Idempotency-Key"))
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, f := range frames {
			_, _ = io.WriteString(w, f)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func frame(id int, v string) string { return fmt.Sprintf("id: %d\ndata: %s\n\n", id, v) }

func TestExecuteStreams(t *testing.T) {
	srv := sseServer(t,
		": keep-alive\n\n",
		frame(1, `{"type":"task_started","taskId":"t1","chatKey":"api:chat:c1","timestamp":1}`),
		frame(2, `{"type":"content","taskId":"t1","messageId":"m1","index":0,"content":"echo: ","timestamp":2}`),
		"id: 3\r\ndata: {\"type\":\"content\",\"taskId\":\"t1\",\r\ndata: \"messageId\":\"m1\",\"index\":1,\"content\":\"hi\"}\r\n\r\n",
		frame(4, `{"type":"content","taskId":"t1","messageId":"m1","index":-1,"content":""}`),
		frame(5, `{"type":"ability_request","taskId":"t1","callId":"c","abilityId":"chat_send","input":"{\"text\":\"x\"}"}`),
		frame(6, `{"type":"ability_response","taskId":"t1","callId":"c","abilityId":"chat_send","result":{"type":"success","result":"{}"}}`),
		frame(7, `{"type":"task_completed","taskId":"t1","durationMs":12,"usage":{"promptTokens":5,"completionTokens":3}}`),
	)
	var got []Event
	sum, err := newTestClient(t, srv.URL, "").Execute(testCtx(t), "c1", "hi", func(e Event) { got = append(got, e) })
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 7 {
		t.Fatalf("got %d events: %+v", len(got), got)
	}
	if got[2].Content != "hi" || got[2].Index != 1 || got[2].ID != "3" || got[3].Index != -1 {
		t.Errorf("content events = %+v %+v", got[2], got[3])
	}
	if !got[5].Result.OK() || got[4].Input != `{"text":"x"}` {
		t.Errorf("ability events = %+v %+v", got[4], got[5])
	}
	want := Summary{TaskID: "t1", Completed: true, DurationMs: 12, Usage: &Usage{5, 3}, ToolCalls: 1}
	if sum.TaskID != want.TaskID || !sum.Completed || sum.DurationMs != 12 || sum.Usage == nil || *sum.Usage != *want.Usage || sum.ToolCalls != 1 {
		t.Errorf("summary = %+v, want %+v", sum, want)
	}
}

func TestExecuteRunError(t *testing.T) {
	srv := sseServer(t, frame(1, `{"type":"error","taskId":"t1","errorCode":"MODEL_ERROR","errorMessage":"the model is down"}`))
	_, err := newTestClient(t, srv.URL, "").Execute(testCtx(t), "c1", "hi", nil)
	var re *RunError
	if !errors.As(err, &re) || re.Code != "MODEL_ERROR" || re.Message != "the model is down" {
		t.Fatalf("err = %v, want a RunError", err)
	}
}

func TestExecuteStreamCut(t *testing.T) {
	srv := sseServer(t, frame(1, `{"type":"task_started","taskId":"t1"}`))
	_, err := newTestClient(t, srv.URL, "").Execute(testCtx(t), "c1", "hi", nil)
	var u *UnreachableError
	if !errors.As(err, &u) || !u.Sent {
		t.Fatalf("err = %v, want an UnreachableError with Sent", err)
	}
}

func TestExecuteIdleStream(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	c, err := New(Options{BaseURL: srv.URL, StreamIdleTimeout: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Execute(testCtx(t), "c1", "hi", nil)
	if !errors.Is(err, errStreamIdle) || !IsUnreachable(err) {
		t.Fatalf("err = %v, want a silent stream to count as gone", err)
	}
}

func TestExecuteRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer right" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":{"code":"UNAUTHORIZED","message":"missing or invalid bearer token"}}`)
			return
		}
		w.Header().Set("Retry-After", "5")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"error":{"code":"QUEUE_FULL","message":"the queue is full"}}`)
	}))
	defer srv.Close()

	_, err := newTestClient(t, srv.URL, "wrong").Execute(testCtx(t), "c1", "hi", nil)
	if !errors.Is(err, ErrUnauthorized) {
		t.Errorf("wrong token: err = %v, want ErrUnauthorized", err)
	}
	_, err = newTestClient(t, srv.URL, "right").Execute(testCtx(t), "c1", "hi", nil)
	var ae *APIError
	if !errors.As(err, &ae) || ae.Code != "QUEUE_FULL" || !ae.Retryable() || errors.Is(err, ErrUnauthorized) {
		t.Errorf("busy: err = %v, want a retryable QUEUE_FULL", err)
	}
}

func TestExecuteConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	c := newTestClient(t, addr, "")
	_, err = c.Execute(testCtx(t), "c1", "hi", nil)
	var u *UnreachableError
	if !errors.As(err, &u) || u.Sent {
		t.Fatalf("err = %v, want an UnreachableError that was not sent", err)
	}
	if err := c.Health(testCtx(t)); !IsUnreachable(err) {
		t.Errorf("Health: err = %v, want unreachable", err)
	}
}

func TestExecuteBlockingJSONFallback(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"success":true,"output":"","toolCalls":[{"tool":"chat_send","input":{"text":"echo: hi"},"output":"{\"success\":true}"}],"replies":["echo: hi"]}`)
	}))
	defer srv.Close()
	var types []string
	sum, err := newTestClient(t, srv.URL, "").Execute(testCtx(t), "c1", "hi", func(e Event) { types = append(types, e.Type) })
	if err != nil || !sum.Completed || sum.ToolCalls != 1 {
		t.Fatalf("sum = %+v, err = %v", sum, err)
	}
	want := "content content ability_request ability_response task_completed"
	if strings.Join(types, " ") != want {
		t.Errorf("events = %v, want %s", types, want)
	}
}

func TestMessagesStatusHealth(t *testing.T) {
	var gotPath, gotQuery, gotAuth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/prefix/health":
			_, _ = io.WriteString(w, `{"status":"ok"}`)
		case "/prefix/api/status":
			gotAuth = r.Header.Get("Authorization")
			_, _ = io.WriteString(w, `{"version":"1.2.3","model":"openai/fake","uptimeSeconds":7,"queue":{}}`)
		default:
			gotPath, gotQuery = r.URL.EscapedPath(), r.URL.RawQuery
			_, _ = io.WriteString(w, `{"chatKey":"api:chat:a b","messages":[{"v":1,"ts":1700000000000,"role":"user","text":"hello","chatKey":"api:chat:a b"}]}`)
		}
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL+"/prefix/", "tok")
	if err := c.Health(testCtx(t)); err != nil {
		t.Errorf("Health: %v", err)
	}
	st, err := c.Status(testCtx(t))
	if err != nil || st.Version != "1.2.3" || st.Model != "openai/fake" || st.UptimeSeconds != 7 {
		t.Errorf("Status = %+v, %v", st, err)
	}
	if gotAuth != "Bearer tok" {
		t.Errorf("Authorization = %q", gotAuth)
	}
	msgs, err := c.Messages(testCtx(t), "api:chat:a b", 5)
	if err != nil || len(msgs) != 1 || msgs[0].Text != "hello" || msgs[0].Time().UnixMilli() != 1700000000000 {
		t.Fatalf("Messages = %+v, %v", msgs, err)
	}
	if gotPath != "/prefix/api/chats/api:chat:a%20b/messages" || gotQuery != "limit=5" {
		t.Errorf("request = %s?%s", gotPath, gotQuery)
	}
}

func TestNewRejectsBadURLs(t *testing.T) {
	for _, u := range []string{"", "ftp://x", "http://"} {
		if _, err := New(Options{BaseURL: u}); err == nil {
			t.Errorf("New(%q) succeeded", u)
		}
	}
	c, err := New(Options{BaseURL: "127.0.0.1:3000/"})
	if err != nil || c.BaseURL() != "http://127.0.0.1:3000" {
		t.Errorf("New without a scheme: %v, %v", c, err)
	}
}
