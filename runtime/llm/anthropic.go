package llm

import (
	"context"
	"errors"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
)

// oneCallPerMessage adapts the tool loop's messages to langchaingo's
// Anthropic client, which reads only the first part of each message: an
// assistant message with text and several tool calls would lose all but
// the text. It rewrites such a message into one assistant message per tool
// call, each followed by its result, which the Anthropic API accepts.
//
// Images come as data-URL parts (as the OpenAI client sends them) and go
// out as base64 image blocks, the only form langchaingo's Anthropic client
// encodes.
//
// It also takes an answer with no content blocks for what it is: Claude
// may answer a tool result with nothing to add (stop_reason end_turn and
// "content": []), which langchaingo reports as anthropic.ErrEmptyResponse;
// that becomes one empty choice instead of a failed call.
//
// Its requests carry cache breakpoints (see planCache).
//
// A streamed call is tapped (see sseDoer): tool input reaches the
// WithToolInputStream func while Claude writes it, each tool call keeps its
// input as Claude sent it, and an error event in the stream (overloaded)
// is typed like the HTTP status it stands for.
type oneCallPerMessage struct {
	llms.Model
}

func (m *oneCallPerMessage) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	callCtx, streamed := startStreamedCall(ctx, opts)
	msgs, plan := planCache(splitToolCalls(dataURLsToBinary(msgs)))
	callCtx = withCall(callCtx, func(c *call) { c.cache = &plan })
	resp, err := m.Model.GenerateContent(callCtx, msgs, opts...)
	if errors.Is(err, anthropic.ErrEmptyResponse) && ctx.Err() == nil {
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{{StopReason: "end_turn"}}}, nil
	}
	if streamed != nil {
		if err != nil {
			return resp, streamed.classify(err)
		}
		streamed.rawInputs(resp)
	}
	return resp, err
}

func splitToolCalls(msgs []llms.MessageContent) []llms.MessageContent {
	out := make([]llms.MessageContent, 0, len(msgs))
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		var calls []llms.ToolCall
		var texts []llms.ContentPart
		for _, p := range m.Parts {
			switch p := p.(type) {
			case llms.ToolCall:
				calls = append(calls, p)
			default:
				texts = append(texts, p)
			}
		}
		if m.Role != llms.ChatMessageTypeAI || len(calls) == 0 || (len(calls) == 1 && len(texts) == 0) {
			out = append(out, m)
			continue
		}
		// Collect the tool results that follow, by call id.
		results := map[string]llms.MessageContent{}
		j := i + 1
		for ; j < len(msgs) && msgs[j].Role == llms.ChatMessageTypeTool; j++ {
			for _, p := range msgs[j].Parts {
				if r, ok := p.(llms.ToolCallResponse); ok {
					results[r.ToolCallID] = llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{r}}
				}
			}
		}
		if len(texts) > 0 {
			out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: texts})
		}
		for _, c := range calls {
			out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{c}})
			if r, ok := results[c.ID]; ok {
				out = append(out, r)
			}
		}
		i = j - 1
	}
	return out
}
