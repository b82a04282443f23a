package agent

import "github.com/tmc/langchaingo/llms"

// mergeChoices turns a model answer into the one choice the loop works on.
// langchaingo's Anthropic client returns one choice per content block, so
// Claude's usual "some text, then a tool_use" arrives as two choices (and
// parallel calls as one choice each); OpenAI-style clients return one
// choice (the runtime never asks for alternatives). The texts are joined
// and every tool call is kept, in order.
//
// GenerationInfo keeps the first value of each key: every choice of an
// Anthropic answer repeats the message's token totals, so adding them up
// would count one call several times.
func mergeChoices(resp *llms.ContentResponse) *llms.ContentChoice {
	merged := &llms.ContentChoice{GenerationInfo: map[string]any{}}
	for _, c := range resp.Choices {
		if c == nil {
			continue
		}
		merged.Content += c.Content
		merged.ReasoningContent += c.ReasoningContent
		merged.ToolCalls = append(merged.ToolCalls, c.ToolCalls...)
		if c.StopReason != "" {
			merged.StopReason = c.StopReason
		}
		if merged.FuncCall == nil {
			merged.FuncCall = c.FuncCall
		}
		for k, v := range c.GenerationInfo {
			if _, ok := merged.GenerationInfo[k]; !ok {
				merged.GenerationInfo[k] = v
			}
		}
	}
	return merged
}
