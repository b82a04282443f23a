package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
)

// ToolChatLoadHistory is the name of the history tool.
const ToolChatLoadHistory = "chat_load_history"

// History loading limits of chat_load_history.
const (
	DefaultHistoryLimit = 30
	MaxHistoryLimit     = 200
)

// ChatLoadHistory is the chat_load_history tool: it reads older messages of
// the current chat from the ChatStore and inserts them into the run's
// messages just before the current user message.
type ChatLoadHistory struct {
	Store chat.Log
}

// Definition describes chat_load_history to the model.
func (t *ChatLoadHistory) Definition() llms.FunctionDefinition {
	return llms.FunctionDefinition{
		Name: ToolChatLoadHistory,
		Description: "Load earlier messages of this chat into your context (they appear before the user's current message). " +
			"Use it when the user refers to something you cannot see. With a keyword, searches the whole chat log instead of taking the latest messages.",
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"limit":   map[string]any{"type": "integer", "minimum": 1, "maximum": MaxHistoryLimit, "description": "How many messages (default 30)."},
				"keyword": map[string]any{"type": "string", "description": "Only messages containing this text (case-insensitive)."},
			},
		},
	}
}

// Call loads and injects history.
func (t *ChatLoadHistory) Call(ctx context.Context, args json.RawMessage) agent.ToolResult {
	var in struct {
		Limit   *float64 `json:"limit"`
		Keyword string   `json:"keyword"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return failure("arguments must be an object with optional limit (integer) and keyword (string)")
	}
	limit := DefaultHistoryLimit
	if in.Limit != nil {
		// Models send 0, 500 or 12.0; clamping serves them better than an error.
		limit = min(max(int(*in.Limit), 1), MaxHistoryLimit)
	}
	req, ok := dispatch.RequestFromContext(ctx)
	if !ok || req.ChatKey == "" {
		return failure("there is no chat in this request")
	}
	ec, ok := agent.ToolExecutionFromContext(ctx)
	if !ok {
		return failure("history can only be loaded during a run")
	}
	if t.Store == nil {
		return failure("this runtime has no chat log")
	}

	mode := "recent"
	var entries []chat.ChatLogEntryV1
	var err error
	if kw := strings.TrimSpace(in.Keyword); kw != "" {
		mode = "search"
		// Search answers newest first; the model reads in time order.
		entries, err = t.Store.Search(ctx, req.ChatKey, kw, limit+1)
		for i, j := 0, len(entries)-1; i < j; i, j = i+1, j-1 {
			entries[i], entries[j] = entries[j], entries[i]
		}
	} else {
		// More than asked: the current message is in the log too, and so
		// are entries that are not messages (system notes, reads of the log).
		entries, err = t.Store.Recent(ctx, req.ChatKey, 2*limit+8)
	}
	if err != nil {
		return failure(fmt.Sprintf("reading the chat log: %v", err))
	}

	msgs := make([]agent.HistoryMessage, 0, len(entries))
	for _, e := range entries {
		switch {
		case e.Role == chat.RoleTool && e.Meta["tool"] == ToolChatLoadHistory:
			// Reading the log is no event of the conversation.
		case e.Role == chat.RoleTool:
			// What ran (or was refused) is part of what happened in the chat.
			msgs = append(msgs, agent.HistoryMessage{Role: chat.RoleAssistant, Text: "[tool call] " + e.Text, TS: e.TS})
		case e.Role != chat.RoleUser && e.Role != chat.RoleAssistant:
		case req.MessageID != "" && e.MessageID == req.MessageID && e.Role == chat.RoleUser:
			// The current message: the model already has it verbatim.
		default:
			msgs = append(msgs, agent.HistoryMessage{Role: e.Role, Text: e.Text, TS: e.TS})
		}
	}
	if len(msgs) > limit {
		msgs = msgs[len(msgs)-limit:]
	}
	inserted := ec.InjectHistory(msgs)
	return result(true, map[string]any{
		"inserted": inserted,
		"mode":     mode,
		"messages": len(msgs),
		"note":     noteFor(inserted, len(msgs), ec.Remaining()),
	})
}

func noteFor(inserted, found, remaining int) string {
	switch {
	case found == 0:
		return "no earlier messages found"
	case inserted == 0 && remaining == 0:
		return "the history limit of this run is reached"
	case inserted == 0:
		return "all of these messages are already in your context"
	default:
		return fmt.Sprintf("%d earlier messages now appear before the user's current message", inserted)
	}
}
