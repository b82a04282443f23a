package agent

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/runtime/turn"
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

// PolicyNamer is a tool whose name in the tool policy differs from the
// name the model calls it by. Providers accept only [a-zA-Z0-9_-]{1,64} as
// a function name, so the MCP tool the policy knows as
// "mcp.github.create_issue" is offered as "mcp__github__create_issue". The
// gate, the step events (so the SSE stream and the audit log) and the
// approvals see the policy name; only the model sees the other.
type PolicyNamer interface {
	PolicyName() string
}

// PolicyName is the name the tool policy knows t by: its PolicyName when
// it has one, else its function name.
func PolicyName(t Tool) string {
	if p, ok := t.(PolicyNamer); ok {
		return p.PolicyName()
	}
	return t.Definition().Name
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

// PresetCall is a call run for the model before its first answer: a call
// someone approved (turn.Call).
type PresetCall = turn.Call

// offeredTools is the tool list of one run: the tools the gate lets the
// model see, asked about by their policy names.
func (r *Runtime) offeredTools(ctx context.Context, defs []llms.Tool, names toolNames) []llms.Tool {
	if r.opts.Gate == nil {
		return defs
	}
	out := make([]llms.Tool, 0, len(defs))
	for _, t := range defs {
		if r.opts.Gate.Offered(ctx, names.policy(t.Function.Name)) {
			out = append(out, t)
		}
	}
	return out
}

// gateCheck asks the gate about one call (name is its policy name); nil
// means it may run.
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
		// An approval names the tool as the policy does; the call goes into
		// the history, which the model reads, under the function name.
		calls[i] = llms.ToolCall{ID: fmt.Sprintf("call_approved_%d", i), Type: "function",
			FunctionCall: &llms.FunctionCall{Name: l.names.model(p.Tool), Arguments: p.Args}}
	}
	return l.runCalls(ctx, 0, llms.MessageContent{Role: llms.ChatMessageTypeAI}, calls)
}

// toolNames maps the function names of a run's tools that have a policy
// name of their own (PolicyNamer) to it and back; every other tool has one
// name for both.
type toolNames struct {
	toPolicy map[string]string
	toModel  map[string]string
}

func newToolNames(byName map[string]Tool) toolNames {
	n := toolNames{}
	for name, t := range byName {
		p, ok := t.(PolicyNamer)
		if !ok {
			continue
		}
		if n.toPolicy == nil {
			n.toPolicy, n.toModel = map[string]string{}, map[string]string{}
		}
		n.toPolicy[name] = p.PolicyName()
		n.toModel[p.PolicyName()] = name
	}
	return n
}

// policy is the policy name of the tool the model calls name.
func (n toolNames) policy(name string) string {
	if p, ok := n.toPolicy[name]; ok {
		return p
	}
	return name
}

// model is the function name of the tool the policy calls name.
func (n toolNames) model(name string) string {
	if m, ok := n.toModel[name]; ok {
		return m
	}
	return name
}
