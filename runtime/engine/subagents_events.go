package engine

import (
	"context"
	"strings"
	"time"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/events"
	"github.com/shipmyagent/ship/runtime/jobs"
)

// subAgentName is the agent the session-plane events name for a sub-agent
// (its job id says which).
const subAgentName = "sub-agent"

// subRun is one sub-agent's run: its place in the chain, its job (id and
// lease), the run that started it, who it acts for, what it was asked
// and what it may spend.
type subRun struct {
	sub      *subScope
	job      jobs.Job
	parent   runScope
	identity string
	in       spawnArgs
	budget   budget
}

// sameBrief returns the sub-agent among s and its ancestors whose brief
// is brief (whitespace collapsed, case folded), or nil: seed 001's
// execution_chain, a sub-agent handing its own task down again.
func (s *subScope) sameBrief(brief string) *subScope {
	for a := s; a != nil; a = a.parent {
		if a.depth > 0 && strings.EqualFold(a.brief, brief) {
			return a
		}
	}
	return nil
}

// chainRequest is the request id of the person's turn that started the
// chain a new sub-agent joins: its parent's, or the running turn's own.
func chainRequest(parent *subScope, run dispatch.Run) string {
	if parent != nil && parent.requestID != "" {
		return parent.requestID
	}
	if ev, ok := run.Watcher.(*runEvents); ok {
		return ev.base.TaskID
	}
	return ""
}

// lease is the sub-agent's lease id ("" for a job recorded before leases).
func (r subRun) lease() string {
	if r.job.Lease == nil {
		return ""
	}
	return r.job.Lease.ID
}

// dispatch is the part of a sub-agent's dispatch_* events that says where
// it stands.
func (r subRun) dispatch(model string) *events.Dispatch {
	d := &events.Dispatch{Agent: subAgentName, Model: model, JobID: r.sub.jobID, ParentRequestID: r.sub.requestID,
		Depth: r.sub.depth, LeaseID: r.lease()}
	if r.sub.parent != nil {
		d.ParentJobID = r.sub.parent.jobID
	}
	return d
}

// dispatchStarted is the sub-agent's dispatch_started: QueueWaitMS is the
// time from agent_spawn to its run.
func (r subRun) dispatchStarted(model string) events.Event {
	d := r.dispatch(model)
	d.QueueWaitMS = time.Since(r.job.Started).Milliseconds()
	return events.Event{Type: events.TypeDispatchStarted, Dispatch: d}
}

// dispatchCompleted is the sub-agent's dispatch_completed: a run stopped
// by its budget failed, and names the budget.
func (r subRun) dispatchCompleted(ctx context.Context, model string, res agent.AgentResult, err error, over *errBudget, took time.Duration) events.Event {
	d := r.dispatch(model)
	d.Outcome, d.DurationMS = outcomeOf(ctx, res, err), took.Milliseconds()
	d.ToolCalls, d.Tokens = len(res.ToolCalls), res.Usage.PromptTokens+res.Usage.CompletionTokens
	if over != nil {
		d.Budget = over.which
	}
	return events.Event{Type: events.TypeDispatchCompleted, Dispatch: d}
}

// publishSub puts a sub-agent's event on the bus, in its parent's chat.
func (e *Engine) publishSub(r subRun, ev events.Event) {
	ev.Timestamp, ev.ChatKey, ev.Channel = time.Now().UnixMilli(), r.parent.req.ChatKey, r.parent.req.Channel
	e.events.Publish(ev)
}
