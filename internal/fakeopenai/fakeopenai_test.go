package fakeopenai

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"
)

var chatSendTool = llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
	Name:        "chat_send",
	Description: "Send a chat message.",
	Parameters: map[string]any{"type": "object",
		"properties": map[string]any{"text": map[string]any{"type": "string"}}, "required": []string{"text"}},
}}

func start(t *testing.T, h Handler) *Server {
	t.Helper()
	s, err := Start(h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func client(t *testing.T, s *Server, key string) *openai.LLM {
	t.Helper()
	llm, err := openai.New(openai.WithBaseURL(s.BaseURL()), openai.WithToken(key), openai.WithModel("m"))
	if err != nil {
		t.Fatal(err)
	}
	return llm
}

func human(text string) llms.MessageContent {
	return llms.TextParts(llms.ChatMessageTypeHuman, text)
}

// streamed collects what langchaingo hands to the streaming callback.
type streamed struct {
	mu     sync.Mutex
	chunks []string
}

func (st *streamed) option() llms.CallOption {
	return llms.WithStreamingFunc(func(_ context.Context, b []byte) error {
		st.mu.Lock()
		defer st.mu.Unlock()
		st.chunks = append(st.chunks, string(b))
		return nil
	})
}

func TestPlainText(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			t.Parallel()
			s := start(t, nil)
			var st streamed
			opts := []llms.CallOption{}
			if stream {
				opts = append(opts, st.option())
			}
			resp, err := client(t, s, "k").GenerateContent(context.Background(),
				[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "be brief"), human("hello there world")},
				opts...)
			if err != nil {
				t.Fatal(err)
			}
			c := resp.Choices[0]
			if c.Content != "echo: hello there world" || len(c.ToolCalls) != 0 || c.StopReason != "stop" {
				t.Fatalf("choice = %+v", c)
			}
			if c.GenerationInfo["PromptTokens"].(int) <= 0 || c.GenerationInfo["TotalTokens"].(int) <= 0 {
				t.Errorf("usage not reported: %v", c.GenerationInfo)
			}
			reqs := s.Requests()
			if len(reqs) != 1 || s.RequestCount() != 1 {
				t.Fatalf("recorded %d requests", len(reqs))
			}
			r := reqs[0]
			if r.Model != "m" || r.Stream != stream || len(r.Messages) != 2 || r.LastUser() != "hello there world" ||
				r.Messages[0].Role != "system" || r.Messages[0].Content != "be brief" || len(r.Body) == 0 {
				t.Fatalf("request = %+v", r)
			}
			if stream {
				var text strings.Builder
				nonEmpty := 0
				for _, ch := range st.chunks {
					text.WriteString(ch)
					if ch != "" {
						nonEmpty++
					}
				}
				if text.String() != "echo: hello there world" || nonEmpty < 2 {
					t.Fatalf("streamed chunks %q", st.chunks)
				}
			}
		})
	}
}

func TestToolCall(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			t.Parallel()
			s := start(t, nil)
			var st streamed
			opts := []llms.CallOption{llms.WithTools([]llms.Tool{chatSendTool})}
			if stream {
				opts = append(opts, st.option())
			}
			resp, err := client(t, s, "k").GenerateContent(context.Background(),
				[]llms.MessageContent{human(`say "hi" ü`)}, opts...)
			if err != nil {
				t.Fatal(err)
			}
			c := resp.Choices[0]
			if len(c.ToolCalls) != 1 || c.StopReason != "tool_calls" || c.Content != "" {
				t.Fatalf("choice = %+v", c)
			}
			tc := c.ToolCalls[0]
			if tc.ID != "call_1" || tc.Type != "function" || tc.FunctionCall.Name != "chat_send" ||
				tc.FunctionCall.Arguments != `{"text":"echo: say \"hi\" ü"}` {
				t.Fatalf("tool call = %+v %+v", tc, tc.FunctionCall)
			}
			r := s.Requests()[0]
			if !r.HasTool("chat_send") || r.HasTool("other") || r.Tools[0].Description != "Send a chat message." ||
				!strings.Contains(string(r.Tools[0].Parameters), `"required":["text"]`) {
				t.Fatalf("tools = %+v", r.Tools)
			}
			if stream {
				// The client passes tool-call deltas to the streaming callback
				// as JSON text, not as content.
				joined := strings.Join(st.chunks, "")
				if !strings.Contains(joined, `"name":"chat_send"`) {
					t.Fatalf("streamed chunks %q", st.chunks)
				}
			}
		})
	}
}

func TestTwoToolCallsStreamed(t *testing.T) {
	t.Parallel()
	s := start(t, func(Request) Response {
		return Response{Content: "working on it", ToolCalls: []ToolCall{
			{Name: "chat_send", Arguments: `{"text":"first part of the answer"}`},
			{ID: "call_custom", Name: "lookup", Arguments: `{"q":"two","n":2}`},
		}}
	})
	var st streamed
	resp, err := client(t, s, "k").GenerateContent(context.Background(), []llms.MessageContent{human("go")},
		llms.WithTools([]llms.Tool{chatSendTool}), st.option())
	if err != nil {
		t.Fatal(err)
	}
	c := resp.Choices[0]
	if c.Content != "working on it" || c.StopReason != "tool_calls" || len(c.ToolCalls) != 2 {
		t.Fatalf("choice = %+v", c)
	}
	want := []struct{ id, name, args string }{
		{"call_1", "chat_send", `{"text":"first part of the answer"}`},
		{"call_custom", "lookup", `{"q":"two","n":2}`},
	}
	for i, w := range want {
		got := c.ToolCalls[i]
		if got.ID != w.id || got.FunctionCall.Name != w.name || got.FunctionCall.Arguments != w.args {
			t.Errorf("tool call %d = %+v %+v, want %+v", i, got, got.FunctionCall, w)
		}
	}
}

func TestToolResultRoundTrip(t *testing.T) {
	t.Parallel()
	s := start(t, nil)
	llm := client(t, s, "k")
	ctx := context.Background()
	tools := llms.WithTools([]llms.Tool{chatSendTool})
	history := []llms.MessageContent{{Role: llms.ChatMessageTypeHuman, Parts: []llms.ContentPart{
		llms.TextContent{Text: "part one, "}, llms.TextContent{Text: "part two"}}}}
	first, err := llm.GenerateContent(ctx, history, tools)
	if err != nil {
		t.Fatal(err)
	}
	call := first.Choices[0].ToolCalls[0]
	history = append(history,
		llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{call}},
		llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
			llms.ToolCallResponse{ToolCallID: call.ID, Name: "chat_send", Content: `{"ok":true}`}}})
	second, err := llm.GenerateContent(ctx, history, tools)
	if err != nil {
		t.Fatal(err)
	}
	if c := second.Choices[0]; c.Content != "" || len(c.ToolCalls) != 0 || c.StopReason != "stop" {
		t.Fatalf("second choice = %+v", c)
	}
	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("recorded %d requests", len(reqs))
	}
	if got := reqs[0].LastUser(); got != "part one, part two" {
		t.Errorf("multi-part content decoded as %q", got)
	}
	msgs := reqs[1].Messages
	if len(msgs) != 3 {
		t.Fatalf("messages = %+v", msgs)
	}
	if a := msgs[1]; a.Role != "assistant" || len(a.ToolCalls) != 1 || a.ToolCalls[0] != (ToolCall{
		ID: "call_1", Name: "chat_send", Arguments: `{"text":"echo: part one, part two"}`}) {
		t.Errorf("assistant message = %+v", a)
	}
	results := reqs[1].ToolResults()
	if len(results) != 1 || results[0].ToolCallID != "call_1" || results[0].Content != `{"ok":true}` {
		t.Errorf("tool results = %+v", results)
	}
	if len(reqs[0].ToolResults()) != 0 {
		t.Errorf("first request has tool results")
	}
}

func TestErrorsReachTheClient(t *testing.T) {
	cases := []struct {
		resp     Response
		contains string
		code     llms.ErrorCode
	}{
		{Response{Status: 500}, "500", llms.ErrCodeProviderUnavailable},
		{Response{Status: 429}, "Rate limit reached", llms.ErrCodeRateLimit},
		{Response{Status: 400, ErrorCode: "context_length_exceeded"}, "maximum context length", llms.ErrCodeTokenLimit},
		{Response{Status: 503, ErrorMessage: "overloaded"}, "overloaded", llms.ErrCodeProviderUnavailable},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d/stream=%v", tc.resp.Status, stream), func(t *testing.T) {
				t.Parallel()
				s := start(t, nil)
				s.SetHandler(func(Request) Response { return tc.resp })
				var st streamed
				opts := []llms.CallOption{}
				if stream {
					opts = append(opts, st.option())
				}
				_, err := client(t, s, "k").GenerateContent(context.Background(), []llms.MessageContent{human("x")}, opts...)
				if err == nil || !strings.Contains(err.Error(), fmt.Sprint(tc.resp.Status)) ||
					!strings.Contains(err.Error(), tc.contains) {
					t.Fatalf("err = %v", err)
				}
				var le *llms.Error
				if !errors.As(openai.MapError(err), &le) || le.Code != tc.code {
					t.Fatalf("MapError(%v) = %v, want code %s", err, openai.MapError(err), tc.code)
				}
				if len(st.chunks) != 0 {
					t.Errorf("streaming callback called on error: %q", st.chunks)
				}
			})
		}
	}
}

func TestAPIKey(t *testing.T) {
	t.Parallel()
	s, err := StartWithOptions(nil, Options{APIKey: "sk-right-key-1234"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	_, err = client(t, s, "sk-wrong-key-5678").GenerateContent(ctx, []llms.MessageContent{human("x")})
	if err == nil || !strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), "wrong-key") {
		t.Fatalf("wrong key: err = %v", err)
	}
	if !llms.IsAuthenticationError(openai.MapError(err)) {
		t.Errorf("MapError(%v) is not an authentication error", err)
	}
	if s.RequestCount() != 0 {
		t.Errorf("rejected request was recorded")
	}
	resp, err := client(t, s, "sk-right-key-1234").GenerateContent(ctx, []llms.MessageContent{human("x")})
	if err != nil || resp.Choices[0].Content != "echo: x" {
		t.Fatalf("right key: resp = %+v, err = %v", resp, err)
	}
}

func TestConcurrentRequests(t *testing.T) {
	t.Parallel()
	s := start(t, nil)
	llm := client(t, s, "k")
	const n = 20
	var wg sync.WaitGroup
	ids := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			opts := []llms.CallOption{llms.WithTools([]llms.Tool{chatSendTool})}
			if i%2 == 0 {
				opts = append(opts, llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
			}
			resp, err := llm.GenerateContent(context.Background(), []llms.MessageContent{human(fmt.Sprint(i))}, opts...)
			if err != nil {
				errs[i] = err
				return
			}
			ids[i] = resp.Choices[0].ToolCalls[0].ID
			if s.RequestCount() == 0 {
				errs[i] = errors.New("request not counted")
			}
		})
		if i == n/2 {
			s.SetHandler(EchoChatSend)
		}
	}
	wg.Wait()
	seen := map[string]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if seen[ids[i]] {
			t.Fatalf("duplicate tool call id %q", ids[i])
		}
		seen[ids[i]] = true
	}
	if s.RequestCount() != n || len(s.Requests()) != n {
		t.Fatalf("count = %d, recorded = %d", s.RequestCount(), len(s.Requests()))
	}
	s.Close()
	s.Close() // idempotent
}
