package agent

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tmc/langchaingo/llms"
)

// Gate governs tool use: which tools the model sees in a run and whether
// one call may run. The engine implements it with the tool policy; a
// Runtime without a Gate offers and runs every tool.
type Gate interface {
	// Offered reports whether the model may see tool at all in the run of
	// ctx: a tool that every call of would be refused is not offered.
	Offered(ctx context.Context, tool string) bool
	// Check decides one call before it runs.
	Check(ctx context.Context, tool string, args json.RawMessage) Verdict
}

// CommandLiner is a tool whose calls carry a command line (exec_shell): a
// Gate matches argument patterns like "git status*" against it.
type CommandLiner interface {
	CommandLine(args json.RawMessage) (string, error)
}

// Kinds of refusal a Verdict can carry.
const (
	// RefusedByPolicy: the policy denies this call.
	RefusedByPolicy = "policy_rejected"
	// RefusedPendingApproval: the call needs approval, which was asked for;
	// it runs in a later turn once someone allowed to approves it.
	RefusedPendingApproval = "approval_required"
)

// Verdict is a Gate's decision on one call.
type Verdict struct {
	Allow bool
	// Refusal is RefusedByPolicy or RefusedPendingApproval when !Allow.
	Refusal string
	// Reason says in one line why (for the model, the events, the log).
	Reason string
	// Content is the tool result the model gets when the call does not run
	// (JSON); empty means {"success":false,"error":Reason}.
	Content string
}

// PresetCall is a tool call a run makes before the model's first answer:
// the call someone approved, run exactly as it was asked for, so the model
// continues from its result.
type PresetCall struct {
	Tool string
	// Args is the call's JSON arguments, exactly as approved.
	Args string
}

// offeredTools is the tool list of one run: the tools the gate lets the
// model see.
func (r *Runtime) offeredTools(ctx context.Context, defs []llms.Tool) []llms.Tool {
	if r.opts.Gate == nil {
		return defs
	}
	out := make([]llms.Tool, 0, len(defs))
	for _, t := range defs {
		if r.opts.Gate.Offered(ctx, t.Function.Name) {
			out = append(out, t)
		}
	}
	return out
}

// gateCheck asks the gate about one call; nil means it may run.
func (l *loop) gateCheck(ctx context.Context, step int, callID, name, args string) *ToolResult {
	if l.r.opts.Gate == nil {
		return nil
	}
	v := l.r.opts.Gate.Check(ctx, name, json.RawMessage(args))
	if v.Allow {
		return nil
	}
	res := ToolResult{Content: v.Content}
	if res.Content == "" {
		res = errorResult(v.Reason)
	}
	l.log.Info().Str("tool", name).Str("refusal", v.Refusal).Str("reason", v.Reason).Msg("tool call not run")
	l.emit(ctx, StepEvent{Type: v.Refusal, Step: step, Tool: name, CallID: callID, Input: args, Output: res.Content, Text: v.Reason})
	return &res
}

// runPreset runs the preset calls as if the model had asked for them in a
// step 0, and reports whether one of them delivered text to the user.
func (l *loop) runPreset(ctx context.Context) bool {
	calls := make([]llms.ToolCall, len(l.in.Preset))
	for i, p := range l.in.Preset {
		calls[i] = llms.ToolCall{ID: fmt.Sprintf("call_approved_%d", i), Type: "function",
			FunctionCall: &llms.FunctionCall{Name: p.Tool, Arguments: p.Args}}
	}
	return l.runCalls(ctx, 0, llms.MessageContent{Role: llms.ChatMessageTypeAI}, calls)
}
