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

// newHold is the run's output hold (dispatch.Hold), armed at once when the
// turn carries a check (a scheduled task's schema); a skill with a schema
// arms it when the run loads it.
func newHold(job *turn.OutputCheck) *dispatch.Hold {
	h := &dispatch.Hold{}
	if job != nil {
		h.Arm(*job)
	}
	return h
}

// checkOutput is the output guardrail at the end of a run whose hold is
// armed: the run's output — the last text it sent with chat_send after the
// hold was armed, or its final text when it sent none — is checked against
// the schema. An output that fails goes back to the model with the
// validation errors (a new run in the same chat session, at most
// guardrail.MaxRepairs times); what passes is sent, and what never passes
// is replaced by a note in the chat and a guardrail_failed event. A run
// that failed or was stopped sends none of what it held: its error line
// goes out through the usual fallback.
func (r *Runner) checkOutput(ctx context.Context, hold *dispatch.Hold, in agent.AgentRunInput, res agent.AgentResult, err error, ev *runEvents, log zerolog.Logger) (agent.AgentResult, error) {
	check, armed := hold.Check()
	if !armed {
		return res, err
	}
	send := dispatch.WithoutHold(ctx)
	for repair := 0; ; repair++ {
		held := hold.Take()
		if err != nil || ctx.Err() != nil {
			res.Delivered = false
			return res, err
		}
		// A skill loaded in a repair run may have armed another check.
		check, _ = hold.Check()
		who := check.Kind + " " + check.Name
		output := res.Output
		if len(held) > 0 {
			output = held[len(held)-1]
		}
		problem := outputProblem(check, output)
		if problem == "" {
			doc := guardrail.Document(output)
			res.Delivered = r.Deliverer.Deliver(send, doc, dispatch.ViaChatSend) == nil
			res.Output = doc
			if res.Delivered {
				ev.fallback(doc) // the output, shown as content once it passed
			}
			return res, nil
		}
		if repair == guardrail.MaxRepairs {
			msg := guardrail.FailedMessage(who, problem)
			log.Warn().Str("check", who).Str("errors", problem).Msg("output rejected by its schema")
			e := events.Event{Type: events.TypeGuardrailFailed, ErrorMessage: problem}
			if check.Kind == turn.CheckTask {
				e.TaskName = check.Name
			} else {
				e.Skill = check.Name
			}
			ev.publish(e)
			// The note stands in for the output: the fallback must not
			// send the rejected text.
			res.Delivered = r.Deliverer.Deliver(send, msg, viaGuardrail) == nil
			res.Success, res.Output = false, msg
			return res, fmt.Errorf("checking the output of %s: %w: %s", who, ErrOutputRejected, problem)
		}
		log.Info().Str("check", who).Int("repair", repair+1).Str("errors", problem).Msg("output does not match its schema; asking the model to repair it")
		again := in
		again.Instructions = guardrail.RepairNote(who, output, problem, repair+1)
		again.Preset, again.Files = nil, nil
		more, merr := r.Runtime.Run(ctx, again)
		more.ToolCalls = append(res.ToolCalls, redactCalls(more.ToolCalls, r.Redact)...)
		more.Usage = more.Usage.Add(res.Usage)
		res, err = more, merr
	}
}

// outputProblem is why output fails check, "" when it passes. A schema
// that does not compile rejects every output: an unchecked output must
// never pass.
func outputProblem(check turn.OutputCheck, output string) string {
	schema, err := guardrail.Compile(check.Schema)
	if err != nil {
		return err.Error()
	}
	return schema.Check(output)
}
