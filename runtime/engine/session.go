package engine

import (
	"context"
	"errors"
	"time"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/events"
)

// Seed 001's session-plane events (§9.1) of the runs the queue hands out:
// dispatch_started / dispatch_completed around each agent run, and
// session_created / session_resumed when the run had to build its chat's
// in-memory session. They cost two small events a turn (the turn overhead
// budget); the session ones only come when a session is built.

// Outcomes of dispatch_completed.
const (
	outcomeOK        = "ok"
	outcomeFailed    = "failed"
	outcomeCancelled = "cancelled"
	outcomeTimeout   = "timeout"
)

// outcomeOf names how a run ended: ctx is the run's context (cancelled by
// shutdown or /cancel, past its deadline on a timeout).
func outcomeOf(ctx context.Context, res agent.AgentResult, err error) string {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		return outcomeTimeout
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		return outcomeCancelled
	case err != nil || !res.Success:
		return outcomeFailed
	}
	return outcomeOK
}

// dispatchStarted announces that the queue handed the turn to an agent
// run: which agent, which model, how long the turn waited in the queue.
func (r *runEvents) dispatchStarted(model string, enqueued time.Time) {
	var wait int64
	if !enqueued.IsZero() {
		wait = time.Since(enqueued).Milliseconds()
	}
	r.publish(events.Event{Type: events.TypeDispatchStarted, Dispatch: &events.Dispatch{Agent: r.agent, Model: model, QueueWaitMS: wait}})
}

// dispatchCompleted announces the run's end.
func (r *runEvents) dispatchCompleted(ctx context.Context, res agent.AgentResult, err error, took time.Duration) {
	r.publish(events.Event{Type: events.TypeDispatchCompleted, Dispatch: &events.Dispatch{
		Agent: r.agent, Model: r.model, Outcome: outcomeOf(ctx, res, err), DurationMS: took.Milliseconds(),
		ToolCalls: len(res.ToolCalls), Tokens: res.Usage.PromptTokens + res.Usage.CompletionTokens,
	}})
}

// session announces the chat's session built for the run
// (agent.AgentRunInput.OnSession).
func (r *runEvents) session(_ context.Context, s agent.SessionBuilt) {
	r.publish(sessionEvent(s, r.agent, ""))
}

// sessionEvent is the session_* event of a built session.
func sessionEvent(s agent.SessionBuilt, agentName, jobID string) events.Event {
	typ := events.TypeSessionCreated
	if s.Resumed {
		typ = events.TypeSessionResumed
	}
	return events.Event{Type: typ, Session: &events.Session{Agent: agentName, Restored: s.Restored, JobID: jobID}}
}
