package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/events"
	"github.com/shipmyagent/ship/runtime/guardrail"
	"github.com/shipmyagent/ship/runtime/turn"
)

// ErrOutputRejected: a run's output did not match its schema after the
// model's repairs and was not delivered (the run's error, errors.Is).
var ErrOutputRejected = errors.New("output rejected by its schema")

// viaGuardrail marks, in meta.via, the chat's note that an output was
// rejected: the engine's words, not the model's.
const viaGuardrail = "guardrail"

// outputGuard is the output guardrail of one run. The run's replies are
// held (dispatch.Hold) instead of sent; when the run ends, its output —
// the last text it sent with chat_send, or its final text when it sent
// none — is checked, repaired by the model at most guardrail.MaxRepairs
// times, and then sent, or replaced by a note saying why it was not.
type outputGuard struct {
	check  turn.OutputCheck
	schema *guardrail.Schema
	bad    error // the schema itself is unusable: every output is rejected
	hold   *dispatch.Hold
}

// newOutputGuard returns the guard of a turn, nil when it has none.
func newOutputGuard(c *turn.OutputCheck) *outputGuard {
	if c == nil {
		return nil
	}
	g := &outputGuard{check: *c, hold: &dispatch.Hold{}}
	g.schema, g.bad = guardrail.Compile(c.Schema)
	return g
}

// problem is why output fails the check, "" when it passes.
func (g *outputGuard) problem(output string) string {
	if g.bad != nil {
		return g.bad.Error()
	}
	return g.schema.Check(output)
}

// settle checks the output of the run that gave res (and err), has the
// model repair it with the validation errors in the same chat session,
// and sends what passed or the rejection note. A run that failed or was
// stopped sends none of what it held: its error line goes out through the
// usual fallback.
func (g *outputGuard) settle(ctx context.Context, r *Runner, in agent.AgentRunInput, res agent.AgentResult, err error, ev *runEvents, log zerolog.Logger) (agent.AgentResult, error) {
	send := dispatch.WithoutHold(ctx)
	for repair := 0; ; repair++ {
		held := g.hold.Take()
		if err != nil || ctx.Err() != nil {
			res.Delivered = false
			return res, err
		}
		output := res.Output
		if len(held) > 0 {
			output = held[len(held)-1]
		}
		problem := g.problem(output)
		if problem == "" {
			res.Delivered = r.Deliverer.Deliver(send, guardrail.Document(output), dispatch.ViaChatSend) == nil
			res.Output = guardrail.Document(output)
			return res, nil
		}
		if repair == guardrail.MaxRepairs || g.bad != nil {
			msg := guardrail.FailedMessage(g.check.Name, problem)
			log.Warn().Str("output", g.check.Name).Str("errors", problem).Msg("output rejected by its schema")
			ev.publish(events.Event{Type: events.TypeGuardrailFailed, TaskName: g.check.Name, ErrorMessage: problem})
			// The note stands in for the output: the fallback must not
			// send the rejected text.
			res.Delivered = r.Deliverer.Deliver(send, msg, viaGuardrail) == nil
			res.Success, res.Output = false, msg
			return res, fmt.Errorf("checking the output of %s: %w: %s", g.check.Name, ErrOutputRejected, problem)
		}
		log.Info().Str("output", g.check.Name).Int("repair", repair+1).Str("errors", problem).Msg("output does not match its schema; asking the model to repair it")
		again := in
		again.Instructions = guardrail.RepairNote(g.check.Name, output, problem, repair+1)
		again.Preset, again.Files = nil, nil
		more, merr := r.Runtime.Run(ctx, again)
		more.ToolCalls = append(res.ToolCalls, redactCalls(more.ToolCalls, r.Redact)...)
		more.Usage.PromptTokens += res.Usage.PromptTokens
		more.Usage.CachedPromptTokens += res.Usage.CachedPromptTokens
		more.Usage.CompletionTokens += res.Usage.CompletionTokens
		res, err = more, merr
	}
}
