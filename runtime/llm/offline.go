package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// Offline is a deterministic model for zero-configuration runs, demos and
// tests of the whole product without a network. It really drives the tool
// loop: it replies through chat_send when offered, and first calls
// chat_load_history when the user asks about earlier messages.
type Offline struct{}

// NewOffline returns the offline model.
func NewOffline() *Offline { return &Offline{} }

var _ llms.Model = (*Offline)(nil)

// asksAboutEarlier spots a question about the conversation's past, in
// English or Chinese.
var asksAboutEarlier = regexp.MustCompile(`(?i)\b(earlier|before|history|remember|previous(ly)?|last time|what did i|did i say)\b|之前|历史|刚才|记得|上次`)

// Call implements llms.Model.
func (o *Offline) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, o, prompt, options...)
}

// GenerateContent implements llms.Model.
func (o *Offline) GenerateContent(ctx context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var opts llms.CallOptions
	for _, opt := range options {
		opt(&opts)
	}
	offered := map[string]bool{}
	for _, t := range opts.Tools {
		if t.Function != nil {
			offered[t.Function.Name] = true
		}
	}

	cur := -1 // the current user message: the last human one
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llms.ChatMessageTypeHuman {
			cur = i
			break
		}
	}
	if cur < 0 {
		return answer(ctx, opts, "[offline model] I have no message to answer.")
	}
	text := partsText(msgs[cur])
	calledHistory, sendResult, step := false, "", 0
	for _, m := range msgs[cur+1:] {
		for _, p := range m.Parts {
			switch p := p.(type) {
			case llms.ToolCall:
				step++
				if p.FunctionCall != nil && p.FunctionCall.Name == "chat_load_history" {
					calledHistory = true
				}
			case llms.ToolCallResponse:
				if p.Name == "chat_send" {
					sendResult = p.Content
				}
			}
		}
	}
	if sendResult != "" {
		// The reply went out (or failed, which the loop reports): done.
		if strings.Contains(sendResult, `"success":true`) {
			return answer(ctx, opts, "")
		}
		return answer(ctx, opts, reply(msgs, cur, text))
	}
	if offered["chat_load_history"] && !calledHistory && asksAboutEarlier.MatchString(text) {
		return toolCall(step, "chat_load_history", map[string]any{"limit": 20})
	}
	if offered["chat_send"] {
		return toolCall(step, "chat_send", map[string]any{"text": reply(msgs, cur, text)})
	}
	return answer(ctx, opts, reply(msgs, cur, text))
}

// reply is the offline model's answer: an echo, plus what it can see of the
// chat's past when asked about it.
func reply(msgs []llms.MessageContent, cur int, text string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[offline model] You said: %q.", oneLine(text, 300))
	if asksAboutEarlier.MatchString(text) {
		var earlier []string
		for _, m := range msgs[:cur] {
			if m.Role == llms.ChatMessageTypeHuman {
				earlier = append(earlier, fmt.Sprintf("%q", oneLine(partsText(m), 120)))
			}
		}
		if len(earlier) == 0 {
			b.WriteString(" I see no earlier messages in this chat.")
		} else {
			if len(earlier) > 5 {
				earlier = earlier[len(earlier)-5:]
			}
			fmt.Fprintf(&b, " Earlier in this chat you said: %s.", strings.Join(earlier, ", "))
		}
	}
	return b.String()
}

func toolCall(step int, name string, args map[string]any) (*llms.ContentResponse, error) {
	b, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("encoding offline tool call: %w", err)
	}
	call := llms.ToolCall{
		ID:           fmt.Sprintf("offline_%d", step+1),
		Type:         "function",
		FunctionCall: &llms.FunctionCall{Name: name, Arguments: string(b)},
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{
		StopReason: "tool_calls",
		ToolCalls:  []llms.ToolCall{call},
		FuncCall:   call.FunctionCall,
	}}}, nil
}

func answer(ctx context.Context, opts llms.CallOptions, text string) (*llms.ContentResponse, error) {
	if opts.StreamingFunc != nil && text != "" {
		// Stream word by word so streaming clients see real chunks.
		for _, w := range strings.SplitAfter(text, " ") {
			if err := opts.StreamingFunc(ctx, []byte(w)); err != nil {
				return nil, err
			}
		}
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: text, StopReason: "stop"}}}, nil
}

func partsText(m llms.MessageContent) string {
	var b strings.Builder
	for _, p := range m.Parts {
		if t, ok := p.(llms.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		return string(r[:max]) + "…"
	}
	return s
}
