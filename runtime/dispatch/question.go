package dispatch

import (
	"context"
	"fmt"
	"strings"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/chat"
)

// ViaAsk marks the assistant entry of a question asked with the ask tool
// (meta.via); meta.questionId names it.
const ViaAsk = "ask"

// AnswerCommand is the chat command a choice's button spells: "/answer
// <questionId> <n>". A press runs it as the presser.
const AnswerCommand = "answer"

// AnswerData is the Data of the button for choice n (from 1) of question
// id.
func AnswerData(id string, n int) string { return fmt.Sprintf("/%s %s %d", AnswerCommand, id, n) }

// NumberedChoices is how a question reaches a chat that shows no buttons:
// its choices numbered, and how to answer.
func NumberedChoices(q Question) string {
	var b strings.Builder
	b.WriteString(q.Text)
	b.WriteString("\n\n")
	for i, c := range q.Choices {
		fmt.Fprintf(&b, "%d. %s\n", i+1, c)
	}
	b.WriteString("\nReply with the number of your choice.")
	return b.String()
}

// DeliverQuestion asks q in the chat of the request ctx carries: with a
// button per choice where the channel's dispatcher shows buttons, else as
// a numbered list (NumberedChoices). It then logs an assistant entry (the
// question and its choices, so the model's history has them) and tells
// the run's Watcher.
func (d *Deliverer) DeliverQuestion(ctx context.Context, q Question) error {
	req, ok := RequestFromContext(ctx)
	if !ok || req.Channel == "" {
		noteSend(ctx, ErrNoRequest)
		return ErrNoRequest
	}
	disp, ok := d.Registry.Lookup(req.Channel)
	if !ok {
		err := fmt.Errorf("asking in %s: %w", req.Channel, ErrNoDispatcher)
		noteSend(ctx, err)
		return err
	}
	if d.BeforeSend != nil {
		if err := d.BeforeSend(ctx); err != nil {
			err = fmt.Errorf("recording the question before sending: %w", err)
			noteSend(ctx, err)
			return err
		}
	}
	if live := LiveFromContext(ctx); live != nil {
		live.replying(ctx)
	}
	var err error
	sent := q.Text
	if bs, ok := disp.(ButtonSender); ok {
		buttons := make([]Button, len(q.Choices))
		for i, c := range q.Choices {
			buttons[i] = Button{Text: c, Data: AnswerData(q.ID, i+1)}
		}
		err = bs.SendButtons(ctx, req, q.Text, buttons)
	} else {
		sent = NumberedChoices(q)
		err = disp.SendText(ctx, req, sent)
	}
	noteSend(ctx, err)
	if err != nil {
		return fmt.Errorf("asking in %s: %w", req.Channel, err)
	}
	noteReplied(ctx, sent)
	NoteAsked(ctx, q)
	if d.Store == nil {
		return nil
	}
	meta := replyMeta(req, ViaAsk)
	meta["questionId"], meta["choices"] = q.ID, q.Choices
	if _, aerr := d.Store.Append(ctx, chat.ChatLogEntryV1{
		Channel: req.Channel, ChatID: req.ChatID, ChatKey: req.ChatKey,
		Role: chat.RoleAssistant, Text: NumberedChoices(q), Meta: meta,
	}); aerr != nil {
		zerolog.Ctx(ctx).Error().Err(aerr).Str("chatKey", req.ChatKey).Msg("logging a question asked")
	}
	return nil
}
