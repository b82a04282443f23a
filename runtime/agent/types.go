// Package agent is ship's one agent brain: it assembles the prompt of each
// request (Agent.md + the default prompt + the chat's history + the user's
// text verbatim), runs the langchaingo tool loop and keeps each chat's
// in-memory history.
package agent

import (
	"context"
	"encoding/json"

	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/llm"
	"github.com/shipmyagent/ship/runtime/media"
	"github.com/shipmyagent/ship/runtime/turn"
)

// AgentRunInput is what a run needs: the chat, where its replies go and
// the user's text. (The tools a run calls find the same route in the run's
// context, dispatch.Run.)
type AgentRunInput struct {
	ChatKey string
	// Route is where the message came from and replies go; its channel
	// names the platform in the prompt.
	Route        dispatch.RequestContext
	Instructions string
	// OnStep, when set, sees every step of the run as it happens.
	OnStep func(ctx context.Context, ev StepEvent)
	// Preset calls run before the model's first answer (an approved call).
	Preset []PresetCall
	// Model, when set, answers this run instead of Options.Model (the
	// chat's /model choice, or the model an API request named).
	Model llms.Model
	// Call tunes this run's model calls (temperature, topP, maxTokens);
	// its zero value keeps Options.MaxTokens and the model's defaults.
	Call llm.CallOptions
	// Files are the message's stored files; a vision model sees its
	// images in this run (history keeps only the text, which names them).
	Files []media.File
	// Vision, when set, says whether this run's model takes images (the
	// chat's own model); nil: Options.Vision.
	Vision *bool
	// Watched, when set, says whether anyone sees this run's text while it
	// is written (a platform that shows replies live, an event stream);
	// a run nobody watches asks the model for its answer whole, which
	// costs less than streaming it. nil: as Options.Stream says.
	Watched *bool
	// Prompt, when set, replaces Agent.md's text for this run (an agent
	// profile's prompt file).
	Prompt string
	// OnSession, when set, hears that the chat's in-memory session was
	// built for this run (it was not in memory): new, or resumed from the
	// chat log. It is not called when the session was in memory.
	OnSession func(ctx context.Context, s SessionBuilt)
}

// Step event types.
const (
	StepText      = "text"       // a complete text answer of one model call
	StepTextDelta = "text_delta" // a streamed piece of model text
	// StepToolCallDelta is a streamed piece of a tool call's JSON
	// arguments (Tool names the call; CallIndex counts calls in the step),
	// so a client can show a reply while the model is still writing it.
	StepToolCallDelta = "tool_call_delta"
	// StepAttemptRestarted says the step's model call failed and is made
	// again: the text and tool-call deltas streamed so far in the step are
	// void, and the new attempt streams its own from the start.
	StepAttemptRestarted = "attempt_restarted"
	StepToolCall         = "tool_call"   // the model asked for a tool
	StepToolResult       = "tool_result" // the tool answered (or was refused)
	// StepPolicyRejected and StepApprovalRequired come between a tool_call
	// and its tool_result when the gate did not let the call run; Text
	// says why.
	StepPolicyRejected   = RefusedByPolicy
	StepApprovalRequired = RefusedPendingApproval
)

// StepEvent is one thing that happened during a run (turn.Step).
type StepEvent = turn.Step

// ToolCallRecord is one tool call as reported in AgentResult.
type ToolCallRecord = turn.ToolCall

// AgentResult is the outcome of a run (turn.Result); /api/execute answers
// with it.
type AgentResult = turn.Result

// Usage counts tokens over a run's model calls.
type Usage = turn.Usage

// ToolResult is what a tool gives back to the loop.
type ToolResult struct {
	// Content goes back to the model verbatim (usually JSON).
	Content string
	// OK says whether the tool did what it was asked.
	OK bool
	// Delivered says that user-visible text reached the user.
	Delivered bool
}

// Tool is a capability offered to the model. Tools live above this package
// (package tools) and reach the run through the context: the request
// context, the dispatcher registry and the ToolExecutionContext.
type Tool interface {
	Definition() llms.FunctionDefinition
	Call(ctx context.Context, args json.RawMessage) ToolResult
}
