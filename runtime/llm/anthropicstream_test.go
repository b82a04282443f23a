package llm

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/internal/fakeanthropic"
)

func claudeFake(t *testing.T, h fakeanthropic.Handler) llms.Model {
	t.Helper()
	fake, err := fakeanthropic.Start(h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	m, err := New(Config{Provider: ProviderAnthropic, Model: "claude-test", BaseURL: fake.BaseURL(), APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var sendTool = llms.Tool{Type: "function", Function: &llms.FunctionDefinition{Name: "chat_send",
	Parameters: map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}}}

// TestToolInputStreamsInOrder: the pieces of a tool input reach the
// WithToolInputStream func after the text before them reached the
// streaming func, each call numbered, and the call keeps the input as sent.
func TestToolInputStreamsInOrder(t *testing.T) {
	const input = `{"text":"x < y & z"}`
	m := claudeFake(t, func(fakeanthropic.Request) fakeanthropic.Response {
		return fakeanthropic.Response{Text: "one two three four", ToolUses: []fakeanthropic.ToolUse{{Name: "chat_send", Input: input}},
			Pace: fakeanthropic.Pace{Bytes: 3}}
	})
	var seen []string // what was heard, in order
	var joined strings.Builder
	resp, err := m.GenerateContent(context.Background(), []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")},
		llms.WithTools([]llms.Tool{sendTool}),
		llms.WithStreamingFunc(func(_ context.Context, chunk []byte) error {
			seen = append(seen, "text")
			return nil
		}),
		WithToolInputStream(func(_ context.Context, call int, name, piece string) {
			if call != 0 || name != "chat_send" {
				t.Errorf("piece %q of call %d %s", piece, call, name)
			}
			seen = append(seen, "tool")
			joined.WriteString(piece)
		}))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(seen, " "); got != strings.Repeat("text ", 6)+strings.TrimSpace(strings.Repeat("tool ", 7)) {
		t.Errorf("heard %s", got)
	}
	if joined.String() != input {
		t.Errorf("pieces join to %q", joined.String())
	}
	var args string
	for _, c := range resp.Choices {
		for _, tc := range c.ToolCalls {
			args = tc.FunctionCall.Arguments
		}
	}
	if args != input {
		t.Errorf("arguments %q, want %q as sent", args, input)
	}
}

// TestStreamErrorEventIsTyped: error events after HTTP 200 get the code
// their status would have had; others stay as langchaingo reports them.
func TestStreamErrorEventIsTyped(t *testing.T) {
	cases := map[string]llms.ErrorCode{
		"overloaded_error":      llms.ErrCodeProviderUnavailable,
		"api_error":             llms.ErrCodeProviderUnavailable,
		"rate_limit_error":      llms.ErrCodeRateLimit,
		"invalid_request_error": "",
	}
	for typ, code := range cases {
		t.Run(typ, func(t *testing.T) {
			m := claudeFake(t, func(fakeanthropic.Request) fakeanthropic.Response {
				return fakeanthropic.Response{StreamError: typ}
			})
			_, err := m.GenerateContent(context.Background(), []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")},
				llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
			var le *llms.Error
			typed := errors.As(err, &le)
			if err == nil || !strings.Contains(err.Error(), typ) || typed != (code != "") || (typed && le.Code != code) {
				t.Fatalf("err = %v, want code %q", err, code)
			}
		})
	}
}
