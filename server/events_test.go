package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/server"
)

// sseEvent is one decoded frame.
type sseEvent struct {
	ID   string
	Name string // the frame's event: line ("" without one)
	Data map[string]any
}

func (e sseEvent) typ() string { s, _ := e.Data["type"].(string); return s }
func (e sseEvent) str(k string) string {
	s, _ := e.Data[k].(string)
	return s
}

// sseClient reads an event stream in the background.
type sseClient struct {
	resp   *http.Response
	events chan sseEvent
}

func (e *env) subscribe(path string, header map[string]string) *sseClient {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e.t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+path, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		e.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	c := &sseClient{resp: resp, events: make(chan sseEvent, 1024)}
	go readSSE(resp, c.events)
	return c
}

func readSSE(resp *http.Response, out chan<- sseEvent) {
	defer close(out)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.Data != nil {
				out <- ev
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			ev.ID = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			ev.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.Data)
		}
	}
}

// next returns the next event; the stream must not end first.
func (c *sseClient) next(t *testing.T) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-c.events:
		if !ok {
			t.Fatal("event stream ended")
		}
		return ev
	case <-waitTimeout():
		t.Fatal("hang guard: no event")
	}
	return sseEvent{}
}

// untilFinal collects events up to task_completed or error.
func (c *sseClient) untilFinal(t *testing.T) []sseEvent {
	t.Helper()
	var out []sseEvent
	for {
		ev := c.next(t)
		out = append(out, ev)
		if ev.typ() == "task_completed" || ev.typ() == "error" {
			return out
		}
	}
}

func types(evs []sseEvent) string {
	var out []string
	for _, e := range evs {
		t := e.typ()
		if t == "content" && e.Data["index"] == -1.0 {
			t = "content-end"
		}
		out = append(out, t)
	}
	return strings.Join(out, " ")
}

// joined returns the text of each content message, joined in index order.
func joined(t *testing.T, evs []sseEvent) map[string]string {
	t.Helper()
	msgs := map[string]string{}
	next := map[string]float64{}
	for _, e := range evs {
		if e.typ() != "content" {
			continue
		}
		id, idx := e.str("messageId"), e.Data["index"].(float64)
		if idx == -1 {
			continue
		}
		if idx != next[id] {
			t.Errorf("message %s: chunk %v arrived when %v was expected", id, idx, next[id])
		}
		next[id]++
		msgs[id] += e.str("content")
	}
	return msgs
}

func TestSendStreamsTheRunsEventsInOrder(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("streaming=%v", stream), func(t *testing.T) {
			e := newEnv(t, setup{stream: stream})
			sse := e.subscribe("/api/sse", nil)
			r := e.request(http.MethodPost, "/api/send", []byte(`{"userMessageId":"u-1","message":"hello events","chatId":"ev"}`), nil)
			if r.status != http.StatusOK || r.json(t)["status"] != "ok" || r.json(t)["receivedMessageId"] != "u-1" {
				t.Fatalf("send: %d %s", r.status, r.body)
			}
			evs := sse.untilFinal(t)
			// Unstreamed, the reply is shown once delivered: after the tool's
			// answer. Streamed, it is shown while the model writes it.
			// A new chat's session is created inside the run's dispatch.
			want := "user_message_routed task_started dispatch_started session_created ability_request tool_call ability_response tool_result content content-end dispatch_completed task_completed"
			if stream {
				want = "user_message_routed task_started dispatch_started session_created content content ability_request tool_call ability_response tool_result content-end dispatch_completed task_completed"
			}
			got := types(evs)
			if !sameShape(got, want, stream) {
				t.Errorf("events: %s\nwant:   %s", got, want)
			}
			task := evs[0].str("taskId")
			for _, ev := range evs {
				if ev.str("taskId") != task || ev.str("chatKey") != "api:chat:ev" || ev.Data["timestamp"].(float64) <= 0 || ev.ID == "" {
					t.Errorf("event %v: taskId/chatKey/timestamp/id wrong (task %s)", ev.Data, task)
				}
			}
			if evs[1].str("triggerMessageId") != "u-1" || evs[1].str("taskName") != "hello events" {
				t.Errorf("task_started = %v", evs[1].Data)
			}
			msgs := joined(t, evs)
			if len(msgs) != 1 {
				t.Fatalf("content messages %v, want one", msgs)
			}
			for _, text := range msgs {
				if text != "echo: hello events" {
					t.Errorf("content joins to %q, want the reply the model sent", text)
				}
			}
			var req, resp sseEvent
			for _, ev := range evs {
				switch ev.typ() {
				case "ability_request":
					req = ev
				case "ability_response":
					resp = ev
				}
			}
			if req.str("abilityId") != "chat_send" || req.str("callId") == "" || resp.str("callId") != req.str("callId") ||
				resp.Data["result"].(map[string]any)["type"] != "success" {
				t.Errorf("ability events: %v / %v", req.Data, resp.Data)
			}
		})
	}
}

// sameShape compares event type sequences; a streamed reply may arrive in
// any number (≥ 1) of content chunks.
func sameShape(got, want string, stream bool) bool {
	if !stream {
		return got == want
	}
	collapse := func(s string) string {
		for strings.Contains(s, "content content ") {
			s = strings.ReplaceAll(s, "content content ", "content ")
		}
		return s
	}
	return collapse(got) == collapse(want) && strings.Count(got, "content ") >= 2
}

func TestDuplicateUserMessageIDRunsNothingAlsoAfterRestart(t *testing.T) {
	e := newEnv(t, setup{})
	sse := e.subscribe("/api/sse/api:chat:d", nil)
	body := []byte(`{"userMessageId":"same-id","message":"only once","chatId":"d"}`)
	if s := e.request(http.MethodPost, "/api/send", body, nil).json(t)["status"]; s != "ok" {
		t.Fatalf("first send: %v", s)
	}
	sse.untilFinal(t)
	if s := e.request(http.MethodPost, "/api/send", body, nil).json(t)["status"]; s != "duplicate" {
		t.Fatalf("second send: %v, want duplicate", s)
	}
	// A rejected request does not use up an id.
	bad := e.request(http.MethodPost, "/api/send", []byte(`{"userMessageId":"fresh","message":"  "}`), nil)
	if bad.status != 400 || !strings.Contains(bad.message(t), "message") {
		t.Errorf("blank message: %d %s", bad.status, bad.body)
	}
	if s := e.request(http.MethodPost, "/api/send", []byte(`{"userMessageId":"fresh","message":"now real","chatId":"d"}`), nil).json(t)["status"]; s != "ok" {
		t.Errorf("id after a rejected request: %v", s)
	}
	sse.untilFinal(t)
	dir := e.dir
	e.stop()
	calls := e.fake.RequestCount()

	e2 := newEnv(t, setup{dir: dir})
	if s := e2.request(http.MethodPost, "/api/send", body, nil).json(t)["status"]; s != "duplicate" {
		t.Errorf("after restart: %v, want duplicate", s)
	}
	if calls != 2 || e2.fake.RequestCount() != 0 {
		t.Errorf("model calls: %d before restart (want 2), %d after (want 0)", calls, e2.fake.RequestCount())
	}
}

func TestSendValidationNamesTheField(t *testing.T) {
	e := newEnv(t, setup{})
	for body, field := range map[string]string{
		`{"message":"hi"}`:      "userMessageId",
		`{"userMessageId":"a"}`: "message",
		`{"userMessageId":"a","message":"hi","llmConfig":{"provider":"openai"}}`:                      "llmConfig",
		`{"userMessageId":"a","message":"hi","llmConfig":{"provider":"openai","model":"gpt-x"}}`:      "llmConfig",
		`{"userMessageId":"a","message":"hi","llmConfig":{"provider":"openai","model":"m","topP":3}}`: "topP",
		`{"userMessageId":"a","message":"hi","chatId":"../x"}`:                                        "chatId",
		`{"userMessageId":"a","message":"hi","surprise":1}`:                                           "surprise",
	} {
		r := e.request(http.MethodPost, "/api/send", []byte(body), nil)
		if r.status != 400 || r.errorCode(t) != "INVALID_INPUT" || !strings.Contains(r.message(t), field) {
			t.Errorf("%s: %d %s, want 400 naming %s", body, r.status, r.body, field)
		}
	}
	ok := e.request(http.MethodPost, "/api/send", []byte(`{"userMessageId":"a","message":"hi","llmConfig":{"provider":"openai","model":"m","temperature":0.5}}`), nil)
	if ok.status != 200 {
		t.Errorf("a configured llmConfig: %d %s", ok.status, ok.body)
	}
	if n := e.fake.RequestCount(); n > 1 {
		t.Errorf("rejected requests reached the model (%d calls)", n)
	}
}

func TestExecuteCanStreamItsRun(t *testing.T) {
	e := newEnv(t, setup{stream: true})
	evs := e.streamExecute("/api/execute", `{"instructions":"stream me","chatId":"x"}`)
	if len(evs) == 0 || evs[len(evs)-1].typ() != "task_completed" {
		t.Fatalf("stream: %s", types(evs))
	}
	for _, text := range joined(t, evs) {
		if text != "echo: stream me" {
			t.Errorf("content %q", text)
		}
	}
}

func TestSlowSubscriberIsCutOffWithoutSlowingOthers(t *testing.T) {
	big := strings.Repeat("x", 200_000)
	e := newEnv(t, setup{
		handler: func(r fakeopenai.Request) fakeopenai.Response {
			if len(r.ToolResults()) > 0 {
				return fakeopenai.Response{}
			}
			b, _ := json.Marshal(map[string]string{"text": big})
			return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: "chat_send", Arguments: string(b)}}}
		},
		opts: func(o *server.Options) { o.SSEBuffer = 4 },
	})
	// A subscriber that connects and then never reads.
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /api/sse HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
	waitFor(t, "the stuck subscriber to be connected", func() bool { return e.engine.Subscribers() == 1 })

	// The stuck subscriber starts reading once the bus has cut it off, so
	// it finds the error event: ship gives up a frame that a client does
	// not take within sseWriteTimeout, and the 40 turns may take longer
	// than that on a loaded machine.
	lastFrame := make(chan string, 1)
	go func() {
		for e.engine.Subscribers() != 0 {
			select {
			case <-time.After(time.Millisecond):
			case <-t.Context().Done():
				return
			}
		}
		_ = conn.SetReadDeadline(time.Now().Add(hangGuard))
		rd := bufio.NewReaderSize(conn, 1<<20)
		var last string
		for {
			line, err := rd.ReadString('\n')
			if strings.HasPrefix(line, "data: ") {
				last = line
			}
			if err != nil {
				break
			}
		}
		lastFrame <- last
	}()

	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := e.execute(map[string]any{"instructions": fmt.Sprint("turn ", i), "chatId": fmt.Sprint("c", i%4)})
			if r.status != http.StatusOK {
				t.Errorf("turn %d: %d", i, r.status)
			}
		}()
	}
	wg.Wait() // every run finished although one subscriber fell behind
	select {
	case last := <-lastFrame:
		if !strings.Contains(last, "SUBSCRIBER_TOO_SLOW") {
			t.Errorf("last frame %.200q, want the error event", last)
		}
	case <-time.After(hangGuard):
		t.Fatal("the stuck subscriber was never cut off")
	}
}

func TestLastEventIDReplaysWhatWasMissed(t *testing.T) {
	e := newEnv(t, setup{})
	sse := e.subscribe("/api/sse", nil)
	e.execute(map[string]any{"instructions": "first", "chatId": "r"})
	first := sse.untilFinal(t)
	e.execute(map[string]any{"instructions": "second", "chatId": "r"})
	again := e.subscribe("/api/sse/api:chat:r", map[string]string{"Last-Event-ID": first[len(first)-1].ID})
	replayed := again.untilFinal(t)
	if replayed[1].str("taskName") != "second" {
		t.Errorf("replay starts with %v", replayed[1].Data)
	}
}

func TestInspectionRoutes(t *testing.T) {
	e := newEnv(t, setup{})
	for _, text := range []string{"alpha", "beta gamma", "delta"} {
		e.execute(map[string]any{"instructions": text, "chatId": "insp"})
	}
	models := e.get("/api/models").json(t)["models"].([]any)
	if len(models) != 2 || models[0].(map[string]any)["model"] != "m" {
		t.Errorf("models = %v", models)
	}
	chats := e.get("/api/chats").json(t)["chats"].([]any)
	c := chats[0].(map[string]any)
	if len(chats) != 1 || c["chatKey"] != "api:chat:insp" || c["messages"] != 6.0 || c["lastActivity"].(float64) <= 0 {
		t.Errorf("chats = %v", chats)
	}
	msgs := e.get("/api/chats/api:chat:insp/messages?limit=2").json(t)["messages"].([]any)
	if len(msgs) != 2 || msgs[0].(map[string]any)["text"] != "delta" || msgs[1].(map[string]any)["text"] != "echo: delta" {
		t.Errorf("last 2 messages = %v", msgs)
	}
	found := e.get("/api/chats/api:chat:insp/messages?keyword=GAMMA").json(t)["messages"].([]any)
	if len(found) != 2 {
		t.Errorf("keyword search = %v", found)
	}
	if r := e.get("/api/chats/api:chat:none/messages"); r.status != 404 || r.errorCode(t) != "NOT_FOUND" {
		t.Errorf("unknown chat: %d", r.status)
	}
	if r := e.get("/api/chats/api:chat:insp/messages?limit=0"); r.status != 400 {
		t.Errorf("limit=0: %d", r.status)
	}
}

func TestCORSAllowsOnlyConfiguredOrigins(t *testing.T) {
	e := newEnv(t, setup{token: "tok", opts: func(o *server.Options) { o.CORSOrigins = []string{"https://app.example"} }})
	pre := func(origin string) response {
		return e.request(http.MethodOptions, "/api/execute", nil, map[string]string{"Origin": origin, "Access-Control-Request-Method": "POST"})
	}
	if r := pre("https://app.example"); r.status != 204 || r.header.Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Errorf("allowed origin: %d %v", r.status, r.header)
	}
	if r := pre("https://evil.example"); r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("other origin allowed: %v", r.header)
	}
	d := newEnv(t, setup{token: "tok"})
	r := d.request(http.MethodOptions, "/api/execute", nil, map[string]string{"Origin": "https://app.example", "Access-Control-Request-Method": "POST"})
	if r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Error("CORS allowed without configuration")
	}
}

// streamExecute posts body to path (/api/execute, perhaps with a query)
// asking for the run's events, and returns every event of the stream,
// which closes right after its final one.
func (e *env) streamExecute(path, body string) []sseEvent {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		e.t.Fatalf("Content-Type %q", resp.Header.Get("Content-Type"))
	}
	ch := make(chan sseEvent, 256)
	go readSSE(resp, ch)
	var evs []sseEvent
	for ev := range ch {
		evs = append(evs, ev)
	}
	return evs
}
