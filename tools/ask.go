package tools

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/questions"
)

// ChatAskName is the ask tool's name. It is a chat_ tool: asking is part
// of the conversation, allowed where no rule says otherwise.
const ChatAskName = "chat_ask"

// ChatAsk is the chat_ask tool: the model asks the person it is answering
// a question with 2–8 choices, shown as buttons where the platform has
// them and as a numbered list elsewhere. It returns at once; the answer
// comes later as a new message in the chat (a turn of its own), so a
// question never holds the queue while people think.
type ChatAsk struct {
	Deliverer *dispatch.Deliverer
	Questions *questions.Store
}

// Definition describes chat_ask to the model.
func (t *ChatAsk) Definition() llms.FunctionDefinition {
	return llms.FunctionDefinition{
		Name: ChatAskName,
		Description: "Ask the user a question with 2 to 8 choices, shown as buttons (or a numbered list). " +
			"This returns at once: do not wait; end your turn. The answer arrives later as a new message " +
			"\"[<name> answered your question <id> (...): <n>. <choice>]\".",
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"question": map[string]any{"type": "string", "description": "The question (Markdown)."},
				"choices": map[string]any{
					"type": "array", "items": map[string]any{"type": "string", "maxLength": questions.MaxChoiceChars},
					"minItems": questions.MinChoices, "maxItems": questions.MaxChoices,
					"description": "The choices, short labels.",
				},
				"anyone": map[string]any{"type": "boolean", "description": "Let anyone in the chat answer, not only the person you are answering. Default false."},
				"expiresInMinutes": map[string]any{"type": "integer", "minimum": 1, "maximum": int(questions.MaxTTL / time.Minute),
					"description": "How long the question takes answers; default 1440 (24 hours)."},
			},
			"required": []string{"question", "choices"},
		},
	}
}

// Call keeps the question and asks it in the chat.
func (t *ChatAsk) Call(ctx context.Context, args json.RawMessage) agent.ToolResult {
	var in struct {
		Question string   `json:"question"`
		Choices  []string `json:"choices"`
		Anyone   bool     `json:"anyone"`
		Minutes  int      `json:"expiresInMinutes"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return failure("arguments must be an object with question (a string) and choices (an array of strings)")
	}
	ttl := time.Duration(in.Minutes) * time.Minute
	if _, err := questions.Check(in.Question, in.Choices, ttl); err != nil {
		return failure(err.Error())
	}
	req, ok := dispatch.RequestFromContext(ctx)
	if !ok || req.Channel == "" {
		return failure("there is no chat to ask in for this request")
	}
	run, _ := dispatch.RunFrom(ctx)
	asked := run.Identity
	anyone := in.Anyone
	if asked == "" || !strings.HasPrefix(asked, req.Channel+":") {
		// Asked for nobody of the chat (a scheduled task): whoever is
		// there answers.
		anyone = true
	}
	q, err := t.Questions.Ask(ctx, questions.Question{
		ChatKey: req.ChatKey, Route: req, Asked: asked, Anyone: anyone,
		Text: in.Question, Choices: in.Choices,
	}, ttl)
	if err != nil {
		return failure(err.Error())
	}
	if err := t.Deliverer.DeliverQuestion(ctx, q.Shown()); err != nil {
		return failure("the question was not delivered: " + err.Error())
	}
	res := result(true, map[string]any{
		"questionId": q.ID,
		"expires":    q.Expires.Format(time.RFC3339),
		"note":       "asked; the answer will come as a new message. End your turn now.",
	})
	res.Delivered = true
	return res
}
