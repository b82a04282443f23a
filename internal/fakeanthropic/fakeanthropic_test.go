package fakeanthropic

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
)

var chatSendTool = llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
	Name:        "chat_send",
	Description: "Send a chat message.",
	Parameters: map[string]any{"type": "object",
		"properties": map[string]any{"text": map[string]any{"type": "string"}}, "required": []string{"text"}},
}}

var lookupTool = llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
	Name: "lookup", Description: "Look something up.",
	Parameters: map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}},
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

func client(t *testing.T, s *Server, key string) *anthropic.LLM {
	t.Helper()
	llm, err := anthropic.New(anthropic.WithBaseURL(s.BaseURL()), anthropic.WithToken(key), anthropic.WithModel("claude-test"))
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

func (st *streamed) joined() string {
	st.mu.Lock()
	defer st.mu.Unlock()
	return strings.Join(st.chunks, "")
}

func modes(t *testing.T, f func(t *testing.T, stream bool)) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			t.Parallel()
			f(t, stream)
		})
	}
}

func TestPlainText(t *testing.T) {
	modes(t, func(t *testing.T, stream bool) {
		s := start(t, nil)
		var st streamed
		opts := []llms.CallOption{llms.WithMaxTokens(8192)}
		if stream {
			opts = append(opts, st.option())
		}
		resp, err := client(t, s, "k").GenerateContent(context.Background(),
			[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "be brief"), human("hello there world")}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Choices) != 1 {
			t.Fatalf("%d choices", len(resp.Choices))
		}
		c := resp.Choices[0]
		if c.Content != "echo: hello there world" || len(c.ToolCalls) != 0 || c.StopReason != "end_turn" {
			t.Fatalf("choice = %+v", c)
		}
		if c.GenerationInfo["InputTokens"].(int) <= 0 || c.GenerationInfo["OutputTokens"].(int) <= 0 {
			t.Errorf("usage not reported: %v", c.GenerationInfo)
		}
		reqs := s.Requests()
		if len(reqs) != 1 || s.RequestCount() != 1 {
			t.Fatalf("recorded %d requests", len(reqs))
		}
		r := reqs[0]
		if r.Model != "claude-test" || r.MaxTokens != 8192 || r.Stream != stream || r.System != "be brief" ||
			len(r.Messages) != 1 || r.LastUser() != "hello there world" || r.Version == "" || len(r.Body) == 0 {
			t.Fatalf("request = %+v", r)
		}
		if stream && (st.joined() != "echo: hello there world" || len(st.chunks) < 2) {
			t.Fatalf("streamed chunks %q", st.chunks)
		}
	})
}

// TestTextThenTwoToolUses is Claude's usual shape: a sentence, then tool
// calls. langchaingo answers with one choice per content block, each
// repeating the message's usage; the streaming callback sees only text.
func TestTextThenTwoToolUses(t *testing.T) {
	modes(t, func(t *testing.T, stream bool) {
		s := start(t, func(Request) Response {
			return Response{Text: "Let me send that.", ToolUses: []ToolUse{
				{Name: "chat_send", Input: `{"text":"first ü"}`},
				{ID: "toolu_custom", Name: "lookup", Input: `{"q":"two","n":2}`},
			}, InputTokens: 120, OutputTokens: 30}
		})
		var st streamed
		opts := []llms.CallOption{llms.WithTools([]llms.Tool{chatSendTool, lookupTool})}
		if stream {
			opts = append(opts, st.option())
		}
		resp, err := client(t, s, "k").GenerateContent(context.Background(), []llms.MessageContent{human("go")}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Choices) != 3 {
			t.Fatalf("%d choices, want one per block: %+v", len(resp.Choices), resp.Choices)
		}
		if c := resp.Choices[0]; c.Content != "Let me send that." || len(c.ToolCalls) != 0 {
			t.Fatalf("choice 0 = %+v", c)
		}
		want := []struct{ id, name, args string }{
			{"toolu_fake1", "chat_send", `{"text":"first ü"}`},
			{"toolu_custom", "lookup", `{"n":2,"q":"two"}`}, // the client re-marshals a map: keys sorted
		}
		for i, w := range want {
			c := resp.Choices[i+1]
			if c.Content != "" || len(c.ToolCalls) != 1 || c.StopReason != "tool_use" {
				t.Fatalf("choice %d = %+v", i+1, c)
			}
			tc := c.ToolCalls[0]
			if tc.ID != w.id || tc.FunctionCall.Name != w.name || tc.FunctionCall.Arguments != w.args {
				t.Errorf("tool call %d = %+v %+v, want %+v", i, tc, tc.FunctionCall, w)
			}
		}
		for i, c := range resp.Choices {
			if c.GenerationInfo["InputTokens"] != 120 || c.GenerationInfo["OutputTokens"] != 30 {
				t.Errorf("choice %d usage = %v, want the message totals", i, c.GenerationInfo)
			}
		}
		if stream && st.joined() != "Let me send that." {
			t.Errorf("streamed %q, want the text only", st.chunks)
		}
		r := s.Requests()[0]
		if !r.HasTool("chat_send") || !r.HasTool("lookup") || r.HasTool("other") ||
			!strings.Contains(string(r.Tools[0].InputSchema), `"required":["text"]`) {
			t.Fatalf("tools = %+v", r.Tools)
		}
	})
}

func TestToolResultRoundTrip(t *testing.T) {
	modes(t, func(t *testing.T, stream bool) {
		s := start(t, nil)
		llm := client(t, s, "k")
		ctx := context.Background()
		opts := []llms.CallOption{llms.WithTools([]llms.Tool{chatSendTool})}
		if stream {
			opts = append(opts, llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
		}
		history := []llms.MessageContent{human("hi")}
		first, err := llm.GenerateContent(ctx, history, opts...)
		if err != nil {
			t.Fatal(err)
		}
		call := first.Choices[0].ToolCalls[0]
		history = append(history,
			llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{call}},
			llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
				llms.ToolCallResponse{ToolCallID: call.ID, Name: "chat_send", Content: `{"success":true}`}}})
		// The echo model has nothing to add after the tool result: an empty
		// content, which langchaingo reports as an error of its own.
		_, err = llm.GenerateContent(ctx, history, opts...)
		if !errors.Is(err, anthropic.ErrEmptyResponse) {
			t.Fatalf("second call: err = %v, want anthropic.ErrEmptyResponse", err)
		}
		reqs := s.Requests()
		if len(reqs) != 2 {
			t.Fatalf("recorded %d requests", len(reqs))
		}
		msgs := reqs[1].Messages
		if len(msgs) != 3 || msgs[1].Role != "assistant" || msgs[2].Role != "user" {
			t.Fatalf("messages = %+v", msgs)
		}
		uses := reqs[1].ToolUses()
		if len(uses) != 1 || uses[0].ID != "toolu_fake1" || uses[0].Name != "chat_send" ||
			string(uses[0].Input) != `{"text":"echo: hi"}` {
			t.Errorf("tool uses = %+v", uses)
		}
		results := reqs[1].ToolResults()
		if len(results) != 1 || results[0].ToolUseID != "toolu_fake1" || results[0].Text != `{"success":true}` {
			t.Errorf("tool results = %+v", results)
		}
		if reqs[1].LastUser() != "hi" || len(reqs[0].ToolResults()) != 0 {
			t.Errorf("LastUser = %q, first request results = %v", reqs[1].LastUser(), reqs[0].ToolResults())
		}
	})
}

// TestClientKeepsOnlyFirstPart shows why ship splits tool calls into one
// message each: langchaingo sends only Parts[0] of an assistant message, so
// the second call of a parallel pair vanishes and the real API (and this
// fake) rejects its tool_result.
func TestClientKeepsOnlyFirstPart(t *testing.T) {
	t.Parallel()
	s := start(t, nil)
	call := func(id string) llms.ToolCall {
		return llms.ToolCall{ID: id, Type: "function", FunctionCall: &llms.FunctionCall{Name: "chat_send", Arguments: `{"text":"x"}`}}
	}
	result := func(id string) llms.MessageContent {
		return llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: id, Content: "ok"}}}
	}
	_, err := client(t, s, "k").GenerateContent(context.Background(), []llms.MessageContent{
		human("hi"),
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{call("toolu_a"), call("toolu_b")}},
		result("toolu_a"), result("toolu_b"),
	}, llms.WithTools([]llms.Tool{chatSendTool}))
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "unexpected `tool_use_id`") ||
		!strings.Contains(err.Error(), "toolu_b") {
		t.Fatalf("err = %v, want the API's rejection of the orphaned toolu_b result", err)
	}
	if uses := s.Requests()[0].ToolUses(); len(uses) != 1 || uses[0].ID != "toolu_a" {
		t.Errorf("tool uses sent = %+v", uses)
	}
}

func TestErrorsReachTheClient(t *testing.T) {
	cases := []struct {
		resp     Response
		contains string
	}{
		{Response{Status: 500}, "Internal server error"},
		{Response{Status: 529}, "Overloaded"},
		{Response{Status: 429}, "rate limit"},
		{Response{Status: 400, ErrorMessage: "prompt is too long: 210000 tokens > 200000 maximum"}, "prompt is too long"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.resp.Status), func(t *testing.T) {
			modes(t, func(t *testing.T, stream bool) {
				s := start(t, func(Request) Response { return tc.resp })
				var st streamed
				opts := []llms.CallOption{}
				if stream {
					opts = append(opts, st.option())
				}
				_, err := client(t, s, "k").GenerateContent(context.Background(), []llms.MessageContent{human("x")}, opts...)
				if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("status code: %d", tc.resp.Status)) ||
					!strings.Contains(err.Error(), tc.contains) {
					t.Fatalf("err = %v", err)
				}
				if st.joined() != "" {
					t.Errorf("streaming callback called on error: %q", st.chunks)
				}
			})
		})
	}
}

func TestAPIKey(t *testing.T) {
	t.Parallel()
	s, err := StartWithOptions(nil, Options{APIKey: "sk-ant-right"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	_, err = client(t, s, "sk-ant-wrong").GenerateContent(ctx, []llms.MessageContent{human("x")})
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "invalid x-api-key") {
		t.Fatalf("wrong key: err = %v", err)
	}
	if s.RequestCount() != 0 {
		t.Errorf("rejected request was recorded")
	}
	resp, err := client(t, s, "sk-ant-right").GenerateContent(ctx, []llms.MessageContent{human("x")})
	if err != nil || resp.Choices[0].Content != "echo: x" {
		t.Fatalf("right key: resp = %+v, err = %v", resp, err)
	}
}

func TestConcurrentRequests(t *testing.T) {
	t.Parallel()
	s := start(t, nil)
	llm := client(t, s, "k")
	const n = 16
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
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if seen[ids[i]] {
			t.Fatalf("duplicate tool_use id %q", ids[i])
		}
		seen[ids[i]] = true
	}
	if s.RequestCount() != n || len(s.Requests()) != n {
		t.Fatalf("count = %d, recorded = %d", s.RequestCount(), len(s.Requests()))
	}
	s.Close()
	s.Close() // idempotent
}
