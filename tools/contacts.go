package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/contacts"
	"github.com/shipmyagent/ship/runtime/dispatch"
)

// Names of the contact tools.
const (
	ContactLookupName = "chat_contact_lookup"
	ContactSendName   = "chat_contact_send"
	// ViaContactSend marks, in the target chat's log, a message sent there
	// by chat_contact_send.
	ViaContactSend = "chat_contact_send"
)

// Contacts returns chat_contact_lookup and chat_contact_send over book.
// The tool policy decides who may use them (in groups they are off unless
// a rule allows them).
func Contacts(book *contacts.Book, d *dispatch.Deliverer) []agent.Tool {
	return []agent.Tool{&ContactLookup{Book: book}, &ContactSend{Book: book, Deliverer: d}}
}

// ContactLookup is chat_contact_lookup: who ship knows by that name, and
// where they last wrote.
type ContactLookup struct{ Book *contacts.Book }

// Definition describes chat_contact_lookup to the model.
func (t *ContactLookup) Definition() llms.FunctionDefinition {
	return llms.FunctionDefinition{
		Name: ContactLookupName,
		Description: "Find people ship has talked with, by username (with or without @) or by identity like telegram:123456. " +
			"Returns each match with its platform and where they last wrote.",
		Parameters: map[string]any{
			"type":       "object",
			"properties": map[string]any{"username": map[string]any{"type": "string"}},
			"required":   []string{"username"},
		},
	}
}

// Call looks the name up.
func (t *ContactLookup) Call(_ context.Context, args json.RawMessage) agent.ToolResult {
	var in struct {
		Username string `json:"username"`
	}
	if err := json.Unmarshal(args, &in); err != nil || strings.TrimSpace(in.Username) == "" {
		return failure("arguments must be an object with a non-empty string field username")
	}
	found := t.Book.Lookup(in.Username)
	list := make([]map[string]any, 0, len(found))
	for _, c := range found {
		w := c.Best()
		list = append(list, map[string]any{
			"identity": c.Identity, "username": c.Username, "channel": w.Channel, "chatKey": w.ChatKey,
			"chatType": w.ChatType, "private": c.Private != nil, "lastSeen": c.Seen.UTC().Format(time.RFC3339),
		})
	}
	fields := map[string]any{"contacts": list}
	if len(list) == 0 {
		fields["note"] = "nobody by that name has written to ship yet"
	}
	return result(true, fields)
}

// ContactSend is chat_contact_send: a message to someone else, delivered
// in their private chat with the bot (or the chat they last wrote in) and
// logged there.
type ContactSend struct {
	Book      *contacts.Book
	Deliverer *dispatch.Deliverer
}

// Definition describes chat_contact_send to the model.
func (t *ContactSend) Definition() llms.FunctionDefinition {
	return llms.FunctionDefinition{
		Name: ContactSendName,
		Description: "Send a message to another person ship knows (see chat_contact_lookup), in their private chat with " +
			"the bot, or else in the chat where they last wrote. Use it only when the user asks you to message someone.",
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"username": map[string]any{"type": "string", "description": "username or identity (telegram:123456)"},
				"text":     map[string]any{"type": "string", "description": "the message, exactly as they should see it"},
			},
			"required": []string{"username", "text"},
		},
	}
}

// Call delivers the message. Its result says truthfully whether the
// platform took it.
func (t *ContactSend) Call(ctx context.Context, args json.RawMessage) agent.ToolResult {
	var in struct {
		Username string `json:"username"`
		Text     string `json:"text"`
	}
	if err := json.Unmarshal(args, &in); err != nil || strings.TrimSpace(in.Username) == "" {
		return failure("arguments must be an object with string fields username and text")
	}
	if strings.TrimSpace(in.Text) == "" || !utf8.ValidString(in.Text) {
		return failure("text is empty or not valid UTF-8")
	}
	c, err := t.Book.Find(in.Username)
	if err != nil {
		if errors.Is(err, contacts.ErrAmbiguous) {
			return failure(err.Error() + "; name one by identity")
		}
		return failure(err.Error() + ": they must write to the bot once before it can message them")
	}
	where := c.Best()
	route := where.Route(c)
	if from, ok := dispatch.RequestFromContext(ctx); ok && from.ChatKey == route.ChatKey {
		return failure("that person is in this chat: answer with chat_send instead")
	}
	// The target's chat has its own reply rules; a refusal there is not a
	// refusal of this run's reply.
	tctx, _ := dispatch.WithRefusals(dispatch.WithRequest(ctx, route))
	if _, err := t.Deliverer.DeliverReport(tctx, in.Text, ViaContactSend); err != nil {
		msg := "not delivered: " + err.Error()
		if errors.Is(err, dispatch.ErrReplyExpired) || errors.Is(err, dispatch.ErrReplyLimit) {
			msg = fmt.Sprintf("not delivered: %s only lets a bot answer a recent message, and %s last wrote at %s; "+
				"they must write to the bot again first", where.Channel, c.Identity, where.At.UTC().Format(time.RFC3339))
		}
		return failure(msg)
	}
	return result(true, map[string]any{
		"to": c.Identity, "chatKey": route.ChatKey, "private": c.Private != nil,
	})
}
