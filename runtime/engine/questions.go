package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/questions"
)

// ErrQuestionsOff is returned by Answer when ship keeps no questions.
var ErrQuestionsOff = errors.New("questions are not enabled")

// answerCommand handles "/answer ID N", what a choice's button spells: a
// press on any platform runs it as the presser. The reply goes to the
// presser only (a toast, a callback answer): the chat sees the answer's
// turn.
func (e *Engine) answerCommand(ctx context.Context, args string, req dispatch.RequestContext) string {
	fields := strings.Fields(args)
	if len(fields) != 2 {
		return "Usage: /answer ID N (the buttons of a question send it)."
	}
	n, err := strconv.Atoi(fields[1])
	if err != nil {
		return "Usage: /answer ID N, N the number of a choice."
	}
	by := questions.Answerer{Identity: identity(req), Name: who(req.Username, identity(req)), ChatKey: req.ChatKey}
	reply, err := e.answer(ctx, fields[0], n, by, req)
	var refused *RefusalError
	switch {
	case errors.Is(err, ErrQuestionsOff):
		return "Questions are not enabled here."
	case errors.As(err, &refused):
		return refused.Text
	case err != nil:
		return "Taking the answer failed; try again."
	}
	return reply
}

// Answer implements Door: the console's and the API's way to answer.
func (e *Engine) Answer(ctx context.Context, id string, choice int, by questions.Answerer) (string, error) {
	return e.answer(ctx, id, choice, by, dispatch.RequestContext{})
}

// answer takes by's answer and queues its turn in the question's chat.
// in is the chat message (a press) the answer came with, if any: the
// turn answers it, as a reply to the question where the platform threads.
func (e *Engine) answer(ctx context.Context, id string, choice int, by questions.Answerer, in dispatch.RequestContext) (string, error) {
	if e.questions == nil {
		return "", ErrQuestionsOff
	}
	q, err := e.questions.Answer(ctx, id, choice, by)
	log := e.log.With().Str("question", strings.ToUpper(id)).Str("identity", by.Identity).Logger()
	if err != nil {
		log.Info().Err(err).Msg("answer refused")
		return "", &RefusalError{Err: err, Text: answerRefusal(err, q, choice)}
	}
	log.Info().Str("chatKey", q.ChatKey).Int("choice", choice).Msg("question answered")
	route := q.Route
	if in.ChatKey == q.ChatKey && in.MessageID != "" {
		route.MessageID = in.MessageID
	}
	userID, username := in.UserID, in.Username
	if in.ChatKey == "" {
		// From the console or the API: the turn is the asked person's
		// own, as if they had tapped.
		userID, username = route.UserID, route.Username
	}
	_, err = e.ingress.Submit(ctx, ingress.Submission{
		Channel: route.Channel, ChatKey: q.ChatKey,
		Message: ingress.IncomingChatMessage{
			ChatID: route.ChatID, ChatType: route.ChatType, MessageThreadID: route.MessageThreadID, ThreadID: route.ThreadID,
			UserID: userID, Username: username, MessageID: route.MessageID,
			Text: answerText(q, by.Name),
		},
		Meta: map[string]any{"questionId": q.ID, "answer": choice, "answeredBy": by.Identity},
		// A person's answer to the bot's own question: not counted
		// against their limit, like an approval.
		Unlimited: true,
	})
	if err != nil {
		log.Error().Err(err).Msg("queueing an answer's turn")
		return "", &RefusalError{Err: err, Text: fmt.Sprintf("Answered %q, but I could not go on from it now (%v); tell me again in the chat.", q.Choice(choice), err)}
	}
	return "Answered: " + q.Choice(choice), nil
}

// answerText is the answer as the model (and the chat log) sees it.
func answerText(q questions.Question, name string) string {
	return fmt.Sprintf("[%s answered your question %s (%q): %d. %s]", name, q.ID, clip(q.Text, 200), q.Answer, q.Choice(q.Answer))
}

// answerRefusal says why an answer did nothing, in the chat's words.
func answerRefusal(err error, q questions.Question, choice int) string {
	switch {
	case errors.Is(err, questions.ErrUnknown):
		return "There is no such question (it may be over a week old)."
	case errors.Is(err, questions.ErrAnswered):
		return fmt.Sprintf("Already answered by %s: %s.", q.ByName, q.Choice(q.Answer))
	case errors.Is(err, questions.ErrExpired):
		return fmt.Sprintf("This question expired at %s; nothing was answered. Ask again if it still matters.", q.Expires.UTC().Format("Jan 2 15:04 MST"))
	case errors.Is(err, questions.ErrNotAsked):
		return "This question is for someone else."
	case errors.Is(err, questions.ErrWrongChat):
		return "This question was asked in another chat; answer it there."
	case errors.Is(err, questions.ErrChoice):
		return fmt.Sprintf("There is no choice %d.", choice)
	}
	return "Taking the answer failed; try again."
}

// takeNumberedAnswer makes a message that is only a number (1–8) the
// answer to the newest open question in its chat that its sender may
// answer, where one is open: how a question is answered on a platform
// without buttons. The answer is taken only once the message is known to
// be new and to be run (ingress's Prepare), so a re-delivered "2" answers
// nothing twice, and the message itself is the answer's turn: the model
// sees which question and which choice, the log keeps both.
func (e *Engine) takeNumberedAnswer(s *ingress.Submission) {
	if e.questions == nil || len(s.Turn.Preset) > 0 || s.Channel == chat.ChannelScheduler {
		return
	}
	if _, ok := choiceNumber(s.Message.Text); !ok && s.Prepare == nil {
		return
	}
	asker := s.Turn.Identity
	if asker == "" {
		asker = identity(dispatch.RequestContext{Channel: s.Channel, UserID: s.Message.UserID})
	}
	by := questions.Answerer{Identity: asker, Name: who(s.Message.Username, asker), ChatKey: s.ChatKey}
	prev := s.Prepare
	s.Prepare = func(ctx context.Context, text string) ingress.Prepared {
		p := ingress.Prepared{Text: text}
		if prev != nil {
			p = prev(ctx, text)
		}
		n, ok := choiceNumber(p.Text)
		if !ok || len(p.Files) > 0 {
			return p
		}
		open, err := e.questions.Open(ctx, by.ChatKey)
		if err != nil {
			e.log.Warn().Err(err).Str("chatKey", by.ChatKey).Msg("looking for an open question")
			return p
		}
		for _, q := range open {
			if (q.Asked != by.Identity && !q.Anyone) || n > len(q.Choices) {
				continue
			}
			got, err := e.questions.Answer(ctx, q.ID, n, by)
			if err != nil {
				continue // answered meanwhile, or not theirs: the next one
			}
			e.log.Info().Str("question", q.ID).Str("chatKey", q.ChatKey).Int("choice", n).Msg("question answered by number")
			p.Text = answerText(got, by.Name)
			return p
		}
		return p
	}
}

// choiceNumber reads a message that is only a choice's number.
func choiceNumber(text string) (int, bool) {
	t := strings.TrimSpace(text)
	if len(t) != 1 || t[0] < '1' || t[0] > '0'+questions.MaxChoices {
		return 0, false
	}
	return int(t[0] - '0'), true
}

// Questions implements View.
func (e *Engine) Questions(ctx context.Context, chatKey string) ([]dispatch.Question, error) {
	if e.questions == nil {
		return nil, nil
	}
	open, err := e.questions.Open(ctx, chatKey)
	if err != nil {
		return nil, err
	}
	out := make([]dispatch.Question, len(open))
	for i, q := range open {
		out[i] = q.Shown()
	}
	return out, nil
}
