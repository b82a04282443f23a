package engine

import (
	"context"
	"errors"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/metrics"
	"github.com/shipmyagent/ship/runtime/queue"
)

// watchGauges hands the metrics the values they read at each scrape: the
// queue, the approvals waiting and the background jobs running. Nothing
// is counted per turn for them.
func (e *Engine) watchGauges(m *metrics.Set) {
	if m == nil {
		return
	}
	m.Queue(func() (int, int, int) {
		st := e.queue.Stats()
		return st.Waiting, st.Running, st.Capacity
	})
	if e.gov.approvals != nil {
		m.Approvals(func() int { return len(e.gov.approvals.Pending("")) })
	}
	if e.jobs != nil {
		m.Jobs(e.jobs.Running)
	}
}

// turnOutcome is the outcome label of a run that ended: err is the run's
// error, canceled says shutdown cut it short, undelivered that the
// platform refused its reply.
func turnOutcome(err error, canceled, undelivered bool) string {
	switch {
	case canceled:
		return metrics.OutcomeCancelled
	case err != nil && errorCode(err) == "TIMEOUT":
		return metrics.OutcomeTimeout
	case err != nil:
		return metrics.OutcomeFailed
	case undelivered:
		return metrics.OutcomeUndelivered
	}
	return metrics.OutcomeOK
}

// countRefused counts the messages the front door turned away, beside
// publishing them (refusedEvent).
func countRefused(m *metrics.Set, next func(context.Context, ingress.Submission, error)) func(context.Context, ingress.Submission, error) {
	if m == nil {
		return next
	}
	return func(ctx context.Context, s ingress.Submission, err error) {
		m.Refused(s.Request().Channel)
		next(ctx, s, err)
	}
}

// timedModel times each call of a run's model for the metrics, under the
// model's configured name (a bounded label: names come from ship.json).
type timedModel struct {
	llms.Model
	name string
	m    *metrics.Set
}

// timed wraps model when metrics are on.
func timed(model llms.Model, name string, m *metrics.Set) llms.Model {
	if m == nil || model == nil {
		return model
	}
	return timedModel{Model: model, name: name, m: m}
}

// GenerateContent implements llms.Model.
func (t timedModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	start := time.Now()
	resp, err := t.Model.GenerateContent(ctx, msgs, opts...)
	outcome := metrics.CodeOK
	switch {
	case err != nil && (errors.Is(err, context.Canceled) || ctx.Err() != nil):
		outcome = metrics.OutcomeCancelled
	case err != nil:
		outcome = "error"
	}
	t.m.ModelCall(t.name, outcome, time.Since(start))
	return resp, err
}

// countTurn counts a run that ended, with the tokens it used on its model.
func (r *Runner) countTurn(item queue.Item[ingress.Job], model string, out ingress.Outcome, started time.Time, canceled, undelivered bool) {
	if r.metrics == nil {
		return
	}
	r.metrics.Turn(item.Value.Route.Channel, turnOutcome(out.Err, canceled, undelivered), time.Since(started), started.Sub(item.Enqueued))
	if item.Value.Answer == "" {
		u := out.Result.Usage
		r.metrics.Tokens(model, u.PromptTokens, u.CachedPromptTokens, u.CompletionTokens)
	}
}
