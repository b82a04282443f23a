package dispatch

import "context"

// Run is the state of one run that travels with its context, under one
// key: where its replies go, the reply being shown while written, the
// replies the platform refused, its journal id, and the slots the tool
// policy and the agent keep there. The seed carries dispatchers in the
// context ("dispatchers are context-carried"); keeping everything of the
// run in one value means a reader, or a tracer, finds it in one place.
//
// A Run is never changed once in a context: the With* functions store a
// copy with one field set, so a context handed to a tool keeps seeing the
// run as it was then. Its pointer fields (Live, Refusals, Limits, Hold) are
// shared by the copies and safe for concurrent use.
type Run struct {
	// Request is where the run's replies go.
	Request RequestContext
	// JournalID names the journaled run; "" when the run is not journaled.
	// The deliverer's BeforeSend records a send intent under it.
	JournalID string
	// Live shows the reply being written; nil when nothing streams.
	Live *Live
	// Refusals follows which replies did not reach the user.
	Refusals *Refusals
	// Limits is what the run's own tools may tighten (a skill's
	// allowed-tools; policy.RunLimits); nil outside a governed run.
	Limits RunLimiter
	// Identity is who the run acts for in the tool policy
	// ("telegram:42", "api:ci-bot", "scheduler:daily"); "" outside a
	// governed run.
	Identity string
	// Watcher hears of the files and questions the run shows its chat;
	// nil when nobody listens.
	Watcher Watcher
	// Hold keeps the run's replies while its output is checked (the
	// output guardrail); nil: replies are sent.
	Hold *Hold
	// Scope is the tool policy's view of the run, set and read by the
	// engine's governor; Exec is the state tools act on, set and read by
	// the agent (agent.ToolExecutionContext). Their types belong to those
	// packages, which the dispatch package must not import.
	Scope any
	Exec  any
}

// RunLimiter is what a run's own tools may tighten while it runs
// (policy.RunLimits): Limit limits the rest of the run to the tools
// allowed names; by says who asked.
type RunLimiter interface {
	Limit(by string, allowed []string) error
}

type runKey struct{}

// RunFrom returns the run ctx belongs to; the zero Run outside one.
func RunFrom(ctx context.Context) (Run, bool) {
	r, ok := ctx.Value(runKey{}).(Run)
	return r, ok
}

// WithRun returns a context that carries r.
func WithRun(ctx context.Context, r Run) context.Context {
	return context.WithValue(ctx, runKey{}, r)
}

// with returns ctx with its run changed by set (a new Run outside one).
func with(ctx context.Context, set func(*Run)) context.Context {
	r, _ := RunFrom(ctx)
	set(&r)
	return WithRun(ctx, r)
}
