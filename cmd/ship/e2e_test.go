// End-to-end tests of the real ship binary: each test starts `ship start`
// as a subprocess on a free loopback port, with a loopback fake of the
// OpenAI API as its model, and checks what a user would notice.
package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
)

func TestE2EHealthAndVersion(t *testing.T) {
	t.Parallel()
	fake := startFake(t, nil)
	p := startShip(t, initProject(t), modelEnv(fake))

	if r := p.do(t, "GET", "/health", ""); r.status != http.StatusOK {
		t.Errorf("GET /health: status %d, body %s", r.status, r.body)
	}
	// Cluster mode links nats-server, which links net/http/pprof and
	// expvar: they register /debug/pprof/ and /debug/vars on Go's default
	// mux. ship serves its own, so a profile of the process (its memory,
	// its command line) is never one request away.
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/vars"} {
		if r := p.do(t, "GET", path, ""); r.status != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", path, r.status)
		}
	}
	out, errOut, code := runShip(t, baseEnv(), "version")
	if code != 0 {
		t.Fatalf("ship version: exit %d, stderr %q", code, errOut)
	}
	first, _, _ := strings.Cut(out, "\n") // the lines after it are build details
	printed, ok := strings.CutPrefix(strings.TrimSpace(first), "ship ")
	if !ok || printed == "" {
		t.Fatalf("ship version printed %q, want \"ship <version>\"", out)
	}
	var status struct {
		Version string `json:"version"`
	}
	r := p.do(t, "GET", "/api/status", "")
	if err := json.Unmarshal(r.body, &status); err != nil || r.status != http.StatusOK {
		t.Fatalf("GET /api/status: status %d, body %s", r.status, r.body)
	}
	if status.Version != printed {
		t.Errorf("ship version says %q, /api/status says %q", printed, status.Version)
	}
}

func TestE2EExecuteHello(t *testing.T) {
	t.Parallel()
	fake := startFake(t, nil)
	dir := initProject(t)
	p := startShip(t, dir, modelEnv(fake))

	res := p.mustExecute(t, "", "hello")
	if !res.Success || !slices.Equal(res.Replies, []string{"echo: hello"}) {
		t.Errorf("got success=%v replies=%q, want true [\"echo: hello\"]", res.Success, res.Replies)
	}
	if len(res.ToolCalls) == 0 || res.ToolCalls[0].Tool != "chat_send" {
		t.Errorf("toolCalls = %+v, want chat_send first", res.ToolCalls)
	}
	reqs := fake.Requests()
	if len(reqs) == 0 {
		t.Fatal("the fake model got no request")
	}
	// The turn's first model call ends with the user's text; later calls
	// (if any) append tool results after it.
	if msgs := reqs[0].Messages; len(msgs) == 0 || msgs[len(msgs)-1].Role != "user" || msgs[len(msgs)-1].Content != "hello" {
		t.Errorf("the model's request does not end with the user message \"hello\" verbatim: %+v", msgs)
	}
	if last := reqs[len(reqs)-1]; last.LastUser() != "hello" {
		t.Errorf("the model's last request has the user message %q, want \"hello\"", last.LastUser())
	}

	entries := readChatLog(t, filepath.Join(dir, ".ship", "chats", "api_chat_default.jsonl"))
	var sawUser, sawAssistant bool
	for _, e := range entries {
		if ts, ok := e["ts"].(json.Number); !ok || !isInteger(ts) {
			t.Errorf("ts is not an integer: %v", e)
		}
		if id, present := e["messageId"]; present {
			if _, isString := id.(string); !isString {
				t.Errorf("messageId is not a string: %v", e)
			}
		}
		switch {
		case e["role"] == "user" && e["text"] == "hello":
			sawUser = true
			if e["messageId"] != res.MessageID {
				t.Errorf("user line messageId = %v, the API answered %q", e["messageId"], res.MessageID)
			}
		case e["role"] == "assistant" && e["text"] == "echo: hello":
			sawAssistant = true
		}
	}
	if !sawUser || !sawAssistant {
		t.Errorf("chat log has user line: %v, assistant line: %v; entries: %v", sawUser, sawAssistant, entries)
	}
}

// readChatLog decodes a ChatStore file, keeping numbers as json.Number.
func readChatLog(t *testing.T, path string) []map[string]any {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the chat log: %v", err)
	}
	var out []map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	for dec.More() {
		var e map[string]any
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("chat log %s: %v", raw, err)
		}
		out = append(out, e)
	}
	return out
}

func isInteger(n json.Number) bool {
	_, err := n.Int64()
	return err == nil
}

func lastUserIndex(r fakeopenai.Request) int {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return i
		}
	}
	return -1
}

func TestE2EConcurrentChats(t *testing.T) {
	t.Parallel()
	const turns = 5
	fake := startFake(t, nil)
	p := startShip(t, initProject(t), modelEnv(fake))

	chats := map[string]string{"a": "alpha", "b": "bravo"} // chatId → word of its texts
	var wg sync.WaitGroup
	for chatID, word := range chats {
		wg.Go(func() {
			for i := 1; i <= turns; i++ {
				text := fmt.Sprintf("%s %d", word, i)
				res, err := p.execute(chatID, text)
				if err != nil {
					t.Error(err)
					return
				}
				if !slices.Equal(res.Replies, []string{"echo: " + text}) {
					t.Errorf("chat %s turn %d: replies %q, want [\"echo: %s\"]", chatID, i, res.Replies, text)
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	for _, req := range fake.Requests() {
		cur := lastUserIndex(req)
		if cur < 0 {
			t.Fatalf("a model request without a user message: %+v", req.Messages)
		}
		var word string
		var n int
		if _, err := fmt.Sscanf(req.Messages[cur].Content, "%s %d", &word, &n); err != nil {
			t.Fatalf("unexpected user message %q", req.Messages[cur].Content)
		}
		other := map[string]string{"alpha": "bravo", "bravo": "alpha"}[word]
		var users, want []string
		for _, m := range req.Messages[:cur] {
			if strings.Contains(m.Content, other) {
				t.Errorf("the prompt of %q carries the other chat's text: %q", req.Messages[cur].Content, m.Content)
			}
			if m.Role == "user" && !strings.HasPrefix(m.Content, "[ship runtime") { // the turn's time, not a turn
				users = append(users, m.Content)
			}
		}
		for i := 1; i < n; i++ {
			want = append(want, fmt.Sprintf("%s %d", word, i))
		}
		if !slices.Equal(users, want) {
			t.Errorf("the prompt of %q has earlier user turns %q, want %q", req.Messages[cur].Content, users, want)
		}
	}
}

func TestE2EBadRequests(t *testing.T) {
	t.Parallel()
	fake := startFake(t, nil)
	p := startShip(t, initProject(t), modelEnv(fake))

	huge := `{"instructions":"` + strings.Repeat("a", 1<<20) + `"}`
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
	}{
		{"malformed JSON", "POST", "/api/execute", `{"instructions":`, http.StatusBadRequest},
		{"blank instructions", "POST", "/api/execute", `{"instructions":"  \n\t "}`, http.StatusBadRequest},
		{"unknown route", "GET", "/api/nope", "", http.StatusNotFound},
		{"body over 1 MiB", "POST", "/api/execute", huge, http.StatusRequestEntityTooLarge},
	} {
		r := p.do(t, tc.method, tc.path, tc.body)
		if r.status != tc.status {
			t.Errorf("%s: status %d, want %d; body %.200s", tc.name, r.status, tc.status, r.body)
		}
		if code := errorCode(t, r); code == "" {
			t.Errorf("%s: error.code is empty: %.200s", tc.name, r.body)
		}
	}
	if n := fake.RequestCount(); n != 0 {
		t.Errorf("rejected requests reached the model %d times", n)
	}
}

func TestE2EAPIToken(t *testing.T) {
	t.Parallel()
	const token, wrong = "s3cret", "wr0ng-t0ken"
	fake := startFake(t, nil)
	p := startShip(t, initProject(t), modelEnv(fake, "SHIP_API_TOKEN="+token))

	body := executeBody("", "hello")
	if r := p.do(t, "POST", "/api/execute", body); r.status != http.StatusUnauthorized || errorCode(t, r) == "" {
		t.Errorf("no token: status %d, body %s; want 401 with an error code", r.status, r.body)
	}
	if r := p.do(t, "POST", "/api/execute", body, "Authorization: Bearer "+wrong); r.status != http.StatusUnauthorized {
		t.Errorf("wrong token: status %d, body %s; want 401", r.status, r.body)
	}
	r := p.do(t, "POST", "/api/execute", body, "Authorization: Bearer "+token)
	if r.status != http.StatusOK || !bytes.Contains(r.body, []byte("echo: hello")) {
		t.Errorf("right token: status %d, body %s; want 200 with the reply", r.status, r.body)
	}
	if r := p.do(t, "GET", "/health", ""); r.status != http.StatusOK {
		t.Errorf("GET /health without a token: status %d, want 200", r.status)
	}

	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d after SIGTERM, want 0", code)
	}
	for _, secret := range []string{token, wrong, "test-key"} {
		if strings.Contains(p.stdout.String()+p.stderr.String(), secret) {
			t.Errorf("the secret %q appears in ship's output", secret)
		}
	}
}

func TestE2EQueueFull(t *testing.T) {
	t.Parallel()
	fake := startFake(t, nil)
	entered, release := blockTurn(t, fake, "first")
	dir := initProject(t)
	// The model comes from the environment; only the queue is configured.
	if err := os.WriteFile(filepath.Join(dir, "ship.json"), []byte(`{"queue":{"capacity":1}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startShip(t, dir, modelEnv(fake))

	first := p.echoAsync("q1", "first")
	await(t, entered, "the model call of request 1")
	second := p.echoAsync("q2", "second")
	eventually(t, "GET /api/status showing queue.waiting == 1", func() bool {
		var st struct {
			Queue struct {
				Waiting int `json:"waiting"`
			} `json:"queue"`
		}
		r := p.do(t, "GET", "/api/status", "")
		if err := json.Unmarshal(r.body, &st); err != nil || r.status != http.StatusOK {
			t.Fatalf("GET /api/status: status %d, body %s", r.status, r.body)
		}
		return st.Queue.Waiting == 1
	})

	r := p.do(t, "POST", "/api/execute", executeBody("q3", "third"))
	if r.status != http.StatusServiceUnavailable || errorCode(t, r) != "QUEUE_FULL" || r.header.Get("Retry-After") == "" {
		t.Errorf("third request: status %d, Retry-After %q, body %s; want 503 QUEUE_FULL with Retry-After",
			r.status, r.header.Get("Retry-After"), r.body)
	}
	release()
	for i, ch := range []<-chan error{first, second} {
		if err := await(t, ch, fmt.Sprintf("the answer to request %d", i+1)); err != nil {
			t.Error(err)
		}
	}
}

func TestE2ESigintIdle(t *testing.T) {
	t.Parallel()
	fake := startFake(t, nil)
	p := startShip(t, initProject(t), modelEnv(fake))
	if code := p.stop(t, syscall.SIGINT); code != 0 {
		t.Errorf("exit status %d after SIGINT, want 0", code)
	}
}

func TestE2ERestartKeepsHistory(t *testing.T) {
	t.Parallel()
	fake := startFake(t, nil)
	dir := initProject(t)

	first := startShip(t, dir, modelEnv(fake))
	first.mustExecute(t, "r", "my name is Ann")
	if code := first.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit status %d after SIGTERM, want 0", code)
	}

	second := startShip(t, dir, modelEnv(fake))
	if res := second.mustExecute(t, "r", "what is my name?"); len(res.Replies) != 1 {
		t.Errorf("replies %q, want one", res.Replies)
	}
	var req *fakeopenai.Request
	for _, r := range fake.Requests() {
		if r.LastUser() == "what is my name?" {
			req = &r
			break
		}
	}
	if req == nil {
		t.Fatal("the model never got \"what is my name?\"")
	}
	cur := lastUserIndex(*req)
	earlier := slices.IndexFunc(req.Messages[:cur], func(m fakeopenai.Message) bool {
		return m.Role == "user" && m.Content == "my name is Ann"
	})
	if earlier < 0 {
		t.Fatalf("after the restart the prompt lacks the earlier user message: %+v", req.Messages)
	}
	replied := slices.ContainsFunc(req.Messages[earlier+1:cur], func(m fakeopenai.Message) bool {
		if m.Role != "assistant" {
			return false
		}
		return strings.Contains(m.Content, "echo: my name is Ann") ||
			slices.ContainsFunc(m.ToolCalls, func(c fakeopenai.ToolCall) bool {
				return strings.Contains(c.Arguments, "echo: my name is Ann")
			})
	})
	if !replied {
		t.Errorf("after the restart the prompt lacks the earlier reply between the two user messages: %+v", req.Messages)
	}
}

func TestE2EStartRefused(t *testing.T) {
	t.Parallel()
	fake := startFake(t, nil)
	for _, tc := range []struct {
		name  string
		env   []string
		flags []string
		names []string // the stderr line must name one of these
	}{
		{"no model configured", baseEnv(), nil, []string{"LLM_PROVIDER", "--offline"}},
		{"0.0.0.0 without a token", modelEnv(fake), []string{"--host", "0.0.0.0"}, []string{"SHIP_API_TOKEN"}},
		{"0.0.0.0 with a short token", modelEnv(fake, "SHIP_API_TOKEN=short-s3cret"), []string{"--host", "0.0.0.0"}, []string{"openssl rand -hex 32"}},
	} {
		args := append([]string{"start", initProject(t), "--port", fmt.Sprint(freePort(t))}, tc.flags...)
		_, errOut, code := runShip(t, tc.env, args...)
		line := strings.TrimRight(errOut, "\n")
		if code == 0 || line == "" || strings.Contains(line, "\n") {
			t.Errorf("%s: exit %d, stderr %q; want a non-zero exit and one line on stderr", tc.name, code, errOut)
		}
		if !slices.ContainsFunc(tc.names, func(n string) bool { return strings.Contains(line, n) }) {
			t.Errorf("%s: stderr %q names none of %q", tc.name, errOut, tc.names)
		}
		if strings.Contains(errOut, "short-s3cret") {
			t.Errorf("%s: stderr shows the token: %q", tc.name, errOut)
		}
	}
}

func TestE2EOffline(t *testing.T) {
	t.Parallel()
	p := startShip(t, initProject(t), baseEnv(), "--offline")
	res := p.mustExecute(t, "", "hello")
	if len(res.Replies) != 1 || !strings.HasPrefix(res.Replies[0], "[offline model]") {
		t.Errorf("replies %q, want one starting with \"[offline model]\"", res.Replies)
	}
}
