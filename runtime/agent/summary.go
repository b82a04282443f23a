package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/runtime/chat"
)

// Summaries instead of forgetting: when a chat's history passes its limits,
// the block of oldest turns that trimming would drop is first summarised
// by the model, in a small call of its own, together with the summary
// before it, so the newest summary carries the gist of the whole chat. The
// summary is kept in the chat log as an entry of role "summary" (so it
// survives a restart; /clear starts after it) and stands in the system
// prompt ahead of the remaining history. The log is the truth: a summary
// that fails drops nothing, and the next turn tries again.

// maxSummaryChars bounds one summary: the prompt must stay bounded
// however long the chat runs.
const maxSummaryChars = 4000

// summaryPrompt asks for a summary that keeps what a later turn may need.
const summaryPrompt = `You keep the memory of a chat between people and an AI assistant. ` +
	`Write a summary of the conversation below, merging it with the earlier summary if one is given. ` +
	`Keep what a later answer may need: who the people are and what they asked for, decisions, facts, ` +
	`names, numbers, open questions and promises. Leave out greetings and small talk. ` +
	`Write plain sentences or short bullet points, at most 300 words, in the language of the conversation.`

// summaryTitle heads the summary in the system prompt.
const summaryTitle = "# Summary of the earlier conversation\n"

// summarize asks the model for the new summary of prior plus dropped.
func (r *Runtime) summarize(ctx context.Context, model llms.Model, prior string, dropped []exchange) (string, Usage, error) {
	var b strings.Builder
	if prior != "" {
		b.WriteString("Earlier summary:\n")
		b.WriteString(prior)
		b.WriteString("\n\n")
	}
	b.WriteString("Conversation:\n")
	for _, t := range dropped {
		for _, m := range t {
			writeTranscript(&b, m)
		}
	}
	if r.opts.SummaryModel != nil {
		model = r.opts.SummaryModel
	}
	resp, err := model.GenerateContent(ctx, []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, summaryPrompt),
		llms.TextParts(llms.ChatMessageTypeHuman, b.String()),
	}, llms.WithMaxTokens(800))
	if err != nil {
		return "", Usage{}, fmt.Errorf("summarising the oldest turns: %w", err)
	}
	if len(resp.Choices) == 0 || strings.TrimSpace(resp.Choices[0].Content) == "" {
		return "", Usage{}, fmt.Errorf("summarising the oldest turns: the model answered nothing")
	}
	spent := UsageOf(resp.Choices[0].GenerationInfo)
	return truncateUTF8(strings.TrimSpace(resp.Choices[0].Content), maxSummaryChars), spent, nil
}

// writeTranscript writes one message as a transcript line: who said what,
// the tools called and what they answered (cut short).
func writeTranscript(b *strings.Builder, m llms.MessageContent) {
	who := map[llms.ChatMessageType]string{
		llms.ChatMessageTypeHuman: "User", llms.ChatMessageTypeAI: "Assistant", llms.ChatMessageTypeTool: "Tool",
	}[m.Role]
	if who == "" {
		return
	}
	for _, p := range m.Parts {
		switch p := p.(type) {
		case llms.TextContent:
			if strings.TrimSpace(p.Text) != "" {
				fmt.Fprintf(b, "%s: %s\n", who, p.Text)
			}
		case llms.ToolCall:
			if p.FunctionCall != nil {
				fmt.Fprintf(b, "Assistant called %s %s\n", p.FunctionCall.Name, truncateUTF8(p.FunctionCall.Arguments, 2000))
			}
		case llms.ToolCallResponse:
			fmt.Fprintf(b, "Tool %s answered: %s\n", p.Name, truncateUTF8(p.Content, 500))
		}
	}
}

// keepSummary logs a new summary in the chat's log; keptTurns is how many
// of the turns before it stay history (and are not in the summary).
func (r *Runtime) keepSummary(ctx context.Context, chatKey string, route chatRoute, text string, keptTurns int) error {
	if r.opts.Store == nil {
		return nil
	}
	_, err := r.opts.Store.Append(ctx, chat.ChatLogEntryV1{
		Channel: route.channel, ChatID: route.chatID, ChatKey: chatKey,
		Role: chat.RoleSummary, Text: text, Meta: map[string]any{"keptTurns": keptTurns},
	})
	if err != nil {
		return fmt.Errorf("logging a summary: %w", err)
	}
	return nil
}

// chatRoute is the chat a summary entry belongs to.
type chatRoute struct{ channel, chatID string }

// settle keeps mem within the limits for the session once the run's turn
// is added: the block that trimming drops goes into a new summary (with
// the turns still pending from failed summaries). Without a summary (it
// failed, or there is no store to keep it in) nothing is dropped unless
// the history is past twice its limits, since memory must stay bounded
// while the model cannot summarise; what is then dropped waits, bounded
// too, for the next summary that works. The log holds every message
// either way.
func (r *Runtime) settle(ctx context.Context, model llms.Model, chatKey string, route chatRoute, mem chatMemory) (chatMemory, Usage) {
	kept, dropped := r.sessions.split(mem.turns)
	if len(dropped) == 0 {
		return mem, Usage{}
	}
	log := r.opts.Logger.With().Str("chatKey", chatKey).Logger()
	block := append(append([]exchange(nil), mem.pending...), dropped...)
	sum, spent, err := r.summarize(ctx, model, mem.summary, block)
	if err == nil {
		err = r.keepSummary(ctx, chatKey, route, sum, len(kept))
	}
	if err != nil {
		log.Warn().Err(err).Int("turns", len(mem.turns)).Msg("history over its limits and not summarised; the next turn tries again")
		maxMsgs, maxChars := 2*r.sessions.limits.MaxMessages, 2*r.sessions.limits.MaxChars
		if excess(mem.turns, maxMsgs, maxChars) == 0 {
			return mem, spent
		}
		// The oldest of the pending turns are only in the log now.
		pending := block[excess(block, maxMsgs, maxChars):]
		return chatMemory{turns: kept, summary: mem.summary, pending: pending}, spent
	}
	log.Info().Int("summarised", len(block)).Int("kept", len(kept)).Msg("oldest turns summarised")
	return chatMemory{turns: kept, summary: sum}, spent
}
