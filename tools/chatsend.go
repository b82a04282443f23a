package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/dispatch"
)

// ChatSend is the chat_send tool: it delivers user-visible text to the chat
// of the current request and logs it as an assistant entry.
type ChatSend struct {
	Deliverer *dispatch.Deliverer
}

// Definition describes chat_send to the model.
func (t *ChatSend) Definition() llms.FunctionDefinition {
	return llms.FunctionDefinition{
		Name:        dispatch.ChatSendTool,
		Description: "Send a message to the user in the current chat. This is the only way the user sees your reply.",
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"text": map[string]any{"type": "string", "description": "The message text, exactly as the user should see it."},
			},
			"required": []string{"text"},
		},
	}
}

// Call sends the text. Its result says truthfully whether the platform took
// it: the model must not believe a reply arrived when it did not.
func (t *ChatSend) Call(ctx context.Context, args json.RawMessage) agent.ToolResult {
	var in struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return failure("arguments must be an object with a string field text")
	}
	if strings.TrimSpace(in.Text) == "" {
		return failure("text is empty")
	}
	if !utf8.ValidString(in.Text) {
		return failure("text is not valid UTF-8")
	}
	dl, err := t.Deliverer.DeliverReport(ctx, in.Text, dispatch.ViaChatSend)
	if err != nil {
		msg := "delivery failed"
		switch {
		case errors.Is(err, dispatch.ErrNoRequest):
			msg = "there is no chat to send to in this request"
		case errors.Is(err, dispatch.ErrNoDispatcher):
			msg = "this channel cannot send messages"
		case errors.Is(err, dispatch.ErrReplyExpired):
			msg = "not delivered, and sending again will not help"
		case errors.Is(err, dispatch.ErrReplyLimit):
			msg = "not delivered"
		}
		return failure(msg + ": " + err.Error())
	}
	var fields map[string]any
	if len(dl.Notices) > 0 {
		// Delivered, but not quite as written: the model must know.
		fields = map[string]any{"notice": strings.Join(dl.Notices, " ")}
	}
	res := result(true, fields)
	res.Delivered = true
	return res
}
