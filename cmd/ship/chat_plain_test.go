package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/shipclient"
)

// fakeShip serves the routes `ship chat` uses: each turn streams
// "echo: <text>" in two chunks around a chat_send call. down makes every
// connection fail as a refused dial would.
type fakeShip struct {
	srv  *httptest.Server
	down atomic.Bool
	cut  atomic.Bool // end turns' streams after their first event

	mu   sync.Mutex
	hist []string // "role: text", for /history
}

func newFakeShip(t *testing.T) *fakeShip {
	t.Helper()
	f := &fakeShip{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, `{"status":"ok"}`) })
	mux.HandleFunc("GET /api/status", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"version":"9.9.9","model":"fake/echo","uptimeSeconds":3}`)
	})
	mux.HandleFunc("POST /api/execute", func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Instructions, ChatID string }
		_ = json.NewDecoder(r.Body).Decode(&in)
		reply := "echo: " + in.Instructions
		args, _ := json.Marshal(map[string]string{"text": reply})
		// Logged before the stream ends, as ship does: a /history right
		// after the turn finds it.
		f.mu.Lock()
		f.hist = append(f.hist, "user: "+in.Instructions, "assistant: "+reply)
		f.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		evs := []map[string]any{
			{"type": "task_started", "taskId": "t"},
			{"type": "content", "messageId": "m", "index": 0, "content": reply[:6]},
			{"type": "ability_request", "callId": "c", "abilityId": "chat_send", "input": string(args)},
			{"type": "content", "messageId": "m", "index": 1, "content": reply[6:]},
			{"type": "ability_response", "callId": "c", "abilityId": "chat_send", "result": map[string]string{"type": "success", "result": `{"success":true}`}},
			{"type": "content", "messageId": "m", "index": -1, "content": ""},
			{"type": "task_completed", "durationMs": 5, "usage": map[string]int{"promptTokens": 10, "completionTokens": 2}},
		}
		if in.Instructions == "show" {
			evs = showEvents(r.PathValue("chatKey"))
		}
		for i, ev := range evs {
			b, _ := json.Marshal(ev)
			fmt.Fprintf(w, ": keep-alive\n\nid: %d\ndata: %s\n\n", i+1, b)
			if f.cut.Load() {
				return
			}
		}
	})
	mux.HandleFunc("GET /api/chats/{chatKey}/messages", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		var msgs []shipclient.Message
		for _, h := range f.hist {
			role, text, _ := strings.Cut(h, ": ")
			msgs = append(msgs, shipclient.Message{TS: time.Now().UnixMilli(), Role: role, Text: text, ChatKey: r.PathValue("chatKey")})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"messages": msgs})
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// showEvents is a turn that sends a file and asks a question, in the
// shapes ship's server streams them (runtime/events: artifact, ui).
func showEvents(string) []map[string]any {
	sendArgs := `{"paths":["chart.png"]}`
	askArgs := `{"question":"Which **plan**?","choices":["Plan A","Plan B","Plan C"]}`
	ok := map[string]string{"type": "success", "result": `{"success":true}`}
	return []map[string]any{
		{"type": "task_started", "taskId": "t"},
		{"type": "ability_request", "callId": "c1", "abilityId": "chat_send_file", "input": sendArgs},
		{"type": "artifact", "taskId": "t", "chatKey": "api:chat:t1", "name": "chart.png", "kind": "image", "mimeType": "image/png",
			"size": 12595, "url": "/api/files/api_chat_t1/out1-0-chart.png"},
		{"type": "ability_response", "callId": "c1", "abilityId": "chat_send_file", "result": ok},
		{"type": "ability_request", "callId": "c2", "abilityId": "chat_ask", "input": askArgs},
		{"type": "ui", "taskId": "t", "chatKey": "api:chat:t1", "kind": "choice", "questionId": "Q1", "question": "Which **plan**?",
			"choices": []string{"Plan A", "Plan B", "Plan C"}, "anyone": false, "expiresAt": 1795815812473},
		{"type": "ability_response", "callId": "c2", "abilityId": "chat_ask", "result": ok},
		{"type": "task_completed", "durationMs": 5},
	}
}

// session is a chat session with fakeShip, through a transport that fails
// to dial while the fake is down.
func (f *fakeShip) session(t *testing.T) chatSession {
	t.Helper()
	dialer := &net.Dialer{}
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if f.down.Load() {
				return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
			}
			return dialer.DialContext(ctx, network, addr)
		},
		DisableKeepAlives: true, // every request dials, so down takes effect at once
	}}
	c, err := shipclient.New(shipclient.Options{BaseURL: f.srv.URL, HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	return chatSession{client: c, url: c.BaseURL(), chatID: "t1", chatKey: "api:chat:t1"}
}

// fakeClock is a clock that moves only when the code under test sleeps.
type fakeClock struct {
	now   time.Time
	slept []time.Duration
	onNap func() // called at every sleep, e.g. to bring the server back
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) Sleep(_ context.Context, d time.Duration) error {
	c.slept = append(c.slept, d)
	c.now = c.now.Add(d)
	if c.onNap != nil {
		c.onNap()
	}
	return nil
}

func newPlain(s chatSession, input string, clock *fakeClock) (*plainChat, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	return &plainChat{
		chatSession: s, in: strings.NewReader(input), out: &out, errOut: &errOut,
		now: clock.Now, sleep: clock.Sleep, jitter: func() float64 { return 0.5 },
	}, &out, &errOut
}

func TestPlainChatRendersTurns(t *testing.T) {
	f := newFakeShip(t)
	clock := &fakeClock{now: time.Unix(1e9, 0)}
	p, out, errOut := newPlain(f.session(t), "hello\n/info\n/history 5\n/clear\n/bad\n/quit\nnever sent\n", clock)
	if err := p.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"echo: hello",
		`⚙ chat_send {"text":"echo: hello"} → ok`,
		"— 0.00 s · 1 tool call · 12 tokens (10 in, 2 out)",
		"url      " + f.srv.URL,
		"chat     t1",
		"chatKey  api:chat:t1",
		"server   ship 9.9.9, up 3s",
		"model    fake/echo",
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if len(lines) != len(want)+2 || !slices.Equal(lines[:len(want)], want) {
		t.Fatalf("stdout =\n%s\nwant it to start with\n%s\nand two history lines", out, strings.Join(want, "\n"))
	}
	if !strings.HasSuffix(lines[len(want)], "user      hello") || !strings.HasSuffix(lines[len(want)+1], "assistant echo: hello") {
		t.Errorf("history lines = %q", lines[len(want):])
	}
	if !strings.Contains(errOut.String(), "unknown command /bad") || strings.Count(errOut.String(), "\n") != 1 {
		t.Errorf("stderr = %q, want one line about /bad", errOut)
	}
}

func TestPlainChatShowsFilesAndQuestions(t *testing.T) {
	f := newFakeShip(t)
	clock := &fakeClock{now: time.Unix(1e9, 0)}
	p, out, errOut := newPlain(f.session(t), "show\n2\n", clock)
	if err := p.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`⚙ chat_send_file {"paths":["chart.png"]} → ok`,
		"📎 chart.png (image/png, 12.3 KB) " + f.srv.URL + "/api/files/api_chat_t1/out1-0-chart.png",
		`⚙ chat_ask {"question":"Which **plan**?","choices":["Plan A","Plan B",… → ok`,
		"? Which **plan**?",
		"  1. Plan A",
		"  2. Plan B",
		"  3. Plan C",
		"  type the number to answer (1–3)",
		"— 0.00 s · 2 tool calls · tokens n/a",
		// The typed number goes out as a message of its own.
		"echo: 2",
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if len(lines) < len(want) || !slices.Equal(lines[:len(want)], want) {
		t.Fatalf("stdout =\n%s\nwant it to start with\n%s", out, strings.Join(want, "\n"))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Contains(f.hist, "user: 2") || errOut.Len() != 0 {
		t.Errorf("messages sent %q, stderr %q", f.hist, errOut)
	}
}

func TestPlainChatKeepsTheInputWhileTheServerIsAway(t *testing.T) {
	f := newFakeShip(t)
	f.down.Store(true)
	clock := &fakeClock{now: time.Unix(1e9, 0)}
	naps := 0
	clock.onNap = func() {
		if naps++; naps == 3 {
			f.down.Store(false) // back after the third wait
		}
	}
	p, out, errOut := newPlain(f.session(t), "hello\n", clock)
	if err := p.run(context.Background()); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errOut)
	}
	if want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}; !slices.Equal(clock.slept, want) {
		t.Errorf("waits = %v, want %v", clock.slept, want)
	}
	if !strings.HasPrefix(out.String(), "echo: hello\n") || strings.Count(errOut.String(), "retrying in") != 3 {
		t.Errorf("stdout = %q\nstderr = %q", out, errOut)
	}
}

func TestPlainChatGivesUp(t *testing.T) {
	f := newFakeShip(t)
	f.down.Store(true)
	clock := &fakeClock{now: time.Unix(1e9, 0)}
	p, out, errOut := newPlain(f.session(t), "hello\n", clock)
	err := p.run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "gave up after 1m0s") || !strings.Contains(err.Error(), "--url") {
		t.Fatalf("err = %v, want giving up after a minute", err)
	}
	// 1+2+4+8+16 = 31 s, then the 29 s that are left of the minute.
	want := []time.Duration{1, 2, 4, 8, 16, 29}
	for i := range want {
		want[i] *= time.Second
	}
	if !slices.Equal(clock.slept, want) {
		t.Errorf("waits = %v, want %v", clock.slept, want)
	}
	if out.Len() != 0 || !strings.Contains(errOut.String(), "cannot reach the server") {
		t.Errorf("stdout = %q\nstderr = %q", out, errOut)
	}
}

func TestPlainChatDoesNotResendATurnCutMidReply(t *testing.T) {
	f := newFakeShip(t)
	f.cut.Store(true)
	clock := &fakeClock{now: time.Unix(1e9, 0)}
	p, out, errOut := newPlain(f.session(t), "hello\n", clock)
	if err := p.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	turns := len(f.hist) / 2
	f.mu.Unlock()
	if turns != 1 || len(clock.slept) != 0 {
		t.Errorf("the message ran %d times after %d waits, want once with no retry", turns, len(clock.slept))
	}
	if out.Len() != 0 || !strings.Contains(errOut.String(), "will be in /history") {
		t.Errorf("stdout = %q\nstderr = %q", out, errOut)
	}
}
