package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/queue"
	"github.com/shipmyagent/ship/runtime/turn"
	"github.com/shipmyagent/ship/runtime/usage"
)

// UsageReport is one day's token usage (View.Usage, GET /api/status).
type UsageReport = usage.Report

// UsageRow is one chat's or person's line of a UsageReport.
type UsageRow = usage.Row

// EventUsage marks the system entry a run leaves in its chat's log with
// the tokens it used (meta: replyTo, person, inputTokens,
// cachedInputTokens, outputTokens). It carries no message id: a system
// entry with one says that message was refused.
const EventUsage = "usage"

// usageTopN bounds the chats and people /api/status lists.
const usageTopN = 10

// Usage is day's token usage ("" for today), with its top chats and
// people; ok is false when ship keeps no usage. A day whose file cannot be
// read shows as empty, and the reason is logged.
func (e *Engine) Usage(ctx context.Context, day string) (r UsageReport, ok bool) {
	if e.usage == nil {
		return UsageReport{}, false
	}
	r, err := e.usage.Report(ctx, day, usageTopN)
	if err != nil {
		e.log.Error().Err(err).Str("day", day).Msg("reading token usage")
		return UsageReport{Day: day, Chats: []usage.Row{}, People: []usage.Row{}}, true
	}
	return r, true
}

// person is whom a turn's tokens count against: the identity the policy
// knows them by.
func person(t turn.Turn) string {
	if t.Identity != "" {
		return t.Identity
	}
	return identity(t.Route)
}

// budgetCheck is the ingress's Budget: a message is refused while its
// sender or its chat has used up today's budget, unless the sender holds
// an exempt role of the tool policy in force. Nil without budgets.
func budgetCheck(tally *usage.Tally, b usage.Budget, gov *governor) func(context.Context, ingress.Submission) error {
	if tally == nil || !b.On() {
		return nil
	}
	return func(ctx context.Context, s ingress.Submission) error {
		t := s.Turn
		t.Route = s.Request()
		who := person(t)
		return tally.Check(ctx, b, s.ChatKey, who, gov.current().Roles(who))
	}
}

// tellBudget answers, in the chat, a platform message refused for its
// token budget: the user hears why, not silence. The message and its
// refusal are in the log already (KeepRefused). It reports whether err
// was such a refusal.
func (e *Engine) tellBudget(s ingress.Submission, err error) bool {
	var ex *usage.ExceededError
	if !errors.As(err, &ex) {
		return false
	}
	req := s.Request()
	e.goBackground(func(ctx context.Context) {
		if serr := e.registry.SendText(ctx, req, ex.Reply()); serr != nil {
			e.log.Warn().Err(serr).Str("chatKey", s.ChatKey).Msg("telling a chat its token budget is used up")
		}
	})
	return true
}

// recordUsage counts a run's tokens for today and leaves them in the
// chat's log. A run that did not call the model (a ready answer) counts
// nothing. Failures are logged: the reply matters more than the count.
func (r *Runner) recordUsage(ctx context.Context, item queue.Item[ingress.Job], res turn.Result, log zerolog.Logger) {
	job := item.Value
	if r.usage == nil || job.Answer != "" {
		return
	}
	u, who := res.Usage, person(job.Turn)
	c := countsOf(u)
	if err := r.usage.Add(context.WithoutCancel(ctx), item.ChatKey, who, c); err != nil {
		log.Error().Err(err).Msg("counting a run's tokens")
	}
	req := job.Route
	// Not the run's context: a run cut short by shutdown spent its tokens
	// all the same. Not waited for: the entry becomes durable with the
	// chat's next fsync, so counting costs a turn no fsync of its own.
	_, pending, err := r.Deliverer.Store.AppendDeferred(context.WithoutCancel(ctx), chat.ChatLogEntryV1{
		Channel: req.Channel, ChatID: req.ChatID, ChatKey: item.ChatKey, Role: chat.RoleSystem,
		Text: fmt.Sprintf("tokens: %d in (%d cached), %d out", c.Input, c.CachedInput, c.Output),
		Meta: map[string]any{"event": EventUsage, "replyTo": req.MessageID, "person": who,
			"inputTokens": c.Input, "cachedInputTokens": c.CachedInput, "outputTokens": c.Output},
	})
	if err != nil {
		log.Error().Err(err).Msg("logging a run's tokens")
		return
	}
	pending.Release()
}

// countsOf is a run's token usage as the tally counts it.
func countsOf(u turn.Usage) usage.Counts {
	return usage.Counts{Input: int64(u.PromptTokens), CachedInput: int64(u.CachedPromptTokens), Output: int64(u.CompletionTokens)}
}
