package fakeopenai

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// post sends a raw request and returns the response with its body read.
func post(t *testing.T, method, url, contentType, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

type errorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func decodeError(t *testing.T, resp *http.Response, body string) errorBody {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type = %q", ct)
	}
	var e errorBody
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Message == "" || e.Error.Type == "" {
		t.Fatalf("error body %q (%v)", body, err)
	}
	return e
}

const userHi = `{"model":"m","messages":[{"role":"user","content":"hi"}]`

func TestRejections(t *testing.T) {
	t.Parallel()
	s, err := StartWithOptions(nil, Options{APIKey: "key"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	auth := map[string]string{"Authorization": "Bearer key"}
	tool := func(content string) string {
		return `{"model":"m","messages":[` + content + `]}`
	}
	cases := []struct {
		name, method, path, ctype, body string
		header                          map[string]string
		status                          int
		recorded                        bool
	}{
		{"other path", "POST", "/v1/completions", "application/json", userHi + "}", auth, 404, false},
		{"no v1 prefix", "POST", "/chat/completions", "application/json", userHi + "}", auth, 404, false},
		{"GET", "GET", chatPath, "", "", auth, 405, false},
		{"no key", "POST", chatPath, "application/json", userHi + "}", nil, 401, false},
		{"wrong key", "POST", chatPath, "application/json", userHi + "}", map[string]string{"Authorization": "Bearer nope"}, 401, false},
		{"text body", "POST", chatPath, "text/plain", userHi + "}", auth, 415, false},
		{"malformed", "POST", chatPath, "application/json", userHi, auth, 400, false},
		{"no messages", "POST", chatPath, "application/json", `{"model":"m","messages":[]}`, auth, 400, true},
		{"bad role", "POST", chatPath, "application/json", tool(`{"role":"robot","content":"x"}`), auth, 400, true},
		{"object content", "POST", chatPath, "application/json", tool(`{"role":"user","content":{}}`), auth, 400, true},
		{"orphan tool message", "POST", chatPath, "application/json",
			tool(`{"role":"user","content":"x"},{"role":"tool","tool_call_id":"call_9","content":"r"}`), auth, 400, true},
		{"unanswered tool call", "POST", chatPath, "application/json",
			tool(`{"role":"user","content":"x"},{"role":"assistant","content":"","tool_calls":[{"id":"call_1",` +
				`"type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"user","content":"y"}`), auth, 400, true},
		{"bad tool name", "POST", chatPath, "application/json",
			userHi + `,"tools":[{"type":"function","function":{"name":"has space"}}]}`, auth, 400, true},
		{"stream_options without stream", "POST", chatPath, "application/json",
			userHi + `,"stream_options":{"include_usage":true}}`, auth, 400, true},
	}
	for _, tc := range cases {
		before := s.RequestCount()
		resp, body := post(t, tc.method, s.URL()+tc.path, tc.ctype, tc.body, tc.header)
		if resp.StatusCode != tc.status {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, resp.StatusCode, tc.status, body)
			continue
		}
		decodeError(t, resp, body)
		if got := s.RequestCount() - before; got != map[bool]int{false: 0, true: 1}[tc.recorded] {
			t.Errorf("%s: recorded %d requests", tc.name, got)
		}
	}
}

func TestNonStreamShape(t *testing.T) {
	t.Parallel()
	s := start(t, func(Request) Response {
		return Response{ToolCalls: []ToolCall{{Name: "f"}}, PromptTokens: 7, CompletionTokens: 3}
	})
	resp, body := post(t, "POST", s.BaseURL()+"/chat/completions", "application/json; charset=utf-8", userHi+"}", nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	choice := got["choices"].([]any)[0].(map[string]any)
	msg := choice["message"].(map[string]any)
	call := msg["tool_calls"].([]any)[0].(map[string]any)
	fn := call["function"].(map[string]any)
	usage := got["usage"].(map[string]any)
	if got["object"] != "chat.completion" || got["model"] != "m" || !strings.HasPrefix(got["id"].(string), "chatcmpl-") ||
		msg["content"] != nil || choice["finish_reason"] != "tool_calls" || call["type"] != "function" ||
		fn["name"] != "f" || fn["arguments"] != "{}" || usage["total_tokens"] != 10.0 {
		t.Fatalf("body %s", body)
	}
}

func TestStreamShape(t *testing.T) {
	t.Parallel()
	s := start(t, func(Request) Response {
		return Response{Content: "a b c", ToolCalls: []ToolCall{{Name: "f", Arguments: `{"x":1}`}}}
	})
	body := `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],` +
		`"stream":true,"stream_options":{"include_usage":true}}`
	resp, text := post(t, "POST", s.BaseURL()+"/chat/completions", "application/json", body, nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		if sc.Text() != "" {
			lines = append(lines, sc.Text())
		}
	}
	if !strings.HasSuffix(text, "data: [DONE]\n\n") || lines[len(lines)-1] != "data: [DONE]" {
		t.Fatalf("stream does not end with [DONE]: %q", text)
	}
	var content, args string
	var finish []string
	var usage *outUsage
	for i, l := range lines[:len(lines)-1] {
		var c struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta struct {
					Role      string        `json:"role"`
					Content   string        `json:"content"`
					ToolCalls []outToolCall `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *outUsage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(strings.TrimPrefix(l, "data: ")), &c); err != nil || c.Object != "chat.completion.chunk" {
			t.Fatalf("line %q (%v)", l, err)
		}
		if i == 0 && (len(c.Choices) != 1 || c.Choices[0].Delta.Role != "assistant") {
			t.Fatalf("first chunk %q", l)
		}
		if c.Choices == nil {
			t.Fatalf("choices missing in %q", l)
		}
		if len(c.Choices) == 0 {
			usage = c.Usage
			continue
		}
		d := c.Choices[0].Delta
		content += d.Content
		for _, tc := range d.ToolCalls {
			if tc.Index == nil || *tc.Index != 0 {
				t.Fatalf("tool call delta without index 0: %q", l)
			}
			args += tc.Function.Arguments
		}
		if f := c.Choices[0].FinishReason; f != nil {
			finish = append(finish, *f)
		}
	}
	if content != "a b c" || args != `{"x":1}` || len(finish) != 1 || finish[0] != "tool_calls" ||
		usage == nil || usage.TotalTokens == 0 {
		t.Fatalf("content %q, args %q, finish %v, usage %+v in %q", content, args, finish, usage, text)
	}
	if r := s.Requests()[0]; r.LastUser() != "hi" || !r.Stream {
		t.Fatalf("request = %+v", r)
	}
}

func TestRateLimitHeader(t *testing.T) {
	t.Parallel()
	s := start(t, func(Request) Response { return Response{Status: 429} })
	resp, body := post(t, "POST", s.BaseURL()+"/chat/completions", "application/json", userHi+"}", nil)
	e := decodeError(t, resp, body)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" || e.Error.Code == nil ||
		*e.Error.Code != "rate_limit_exceeded" {
		t.Fatalf("status %d, Retry-After %q, body %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
}

func TestMaxRecorded(t *testing.T) {
	t.Parallel()
	s, err := StartWithOptions(nil, Options{MaxRecorded: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, u := range []string{"1", "2", "3", "4", "5"} {
		post(t, "POST", s.BaseURL()+"/chat/completions", "application/json",
			`{"model":"m","messages":[{"role":"user","content":"`+u+`"}]}`, nil)
	}
	reqs := s.Requests()
	if s.RequestCount() != 5 || len(reqs) != 2 || reqs[0].LastUser() != "4" || reqs[1].LastUser() != "5" {
		t.Fatalf("count %d, requests %+v", s.RequestCount(), reqs)
	}
}

func TestRequestsAreCopies(t *testing.T) {
	t.Parallel()
	s := start(t, func(r Request) Response {
		r.Messages[0].Content = "changed by handler"
		return Response{Content: "ok"}
	})
	post(t, "POST", s.BaseURL()+"/chat/completions", "application/json", userHi+"}", nil)
	r := s.Requests()[0]
	r.Messages[0].Content = "changed by caller"
	if got := s.Requests()[0].Messages[0].Content; got != "hi" {
		t.Fatalf("recorded content = %q", got)
	}
}

func TestCloseWaitsForHandlers(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}), make(chan struct{})
	var finished atomic.Bool
	s := start(t, func(Request) Response {
		close(started)
		<-release
		finished.Store(true)
		return Response{Content: "late"}
	})
	done := make(chan string)
	go func() {
		resp, err := http.Post(s.BaseURL()+"/chat/completions", "application/json", strings.NewReader(userHi+"}"))
		if err != nil {
			done <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- string(b)
	}()
	<-started
	closed := make(chan bool)
	go func() {
		s.Close()
		closed <- finished.Load()
	}()
	close(release)
	if !<-closed {
		t.Error("Close returned before the handler finished")
	}
	if body := <-done; !strings.Contains(body, `"late"`) {
		t.Errorf("in-flight request got %q", body)
	}
}
