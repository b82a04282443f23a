// Package events carries what happens during runs to whoever watches: the
// typed events of the event stream (task_started, content, ability_request, …)
// published on a Bus that SSE clients subscribe to.
package events

import (
	"encoding/json"
	"fmt"
)

// Event types of the stream; their names are a contract with clients.
const (
	TypeTaskStarted       = "task_started"
	TypeUserMessageRouted = "user_message_routed"
	TypeContent           = "content"
	TypeAbilityRequest    = "ability_request"
	TypeAbilityResponse   = "ability_response"
	TypeTaskCompleted     = "task_completed"
	TypeError             = "error"

	// Tool governance: every call is announced (tool_call) and ends in
	// tool_result or tool_error; a call the policy refuses also gets
	// policy_rejected, a call that waits for a person approval_required.
	TypeToolCall         = "tool_call"
	TypeToolResult       = "tool_result"
	TypeToolError        = "tool_error"
	TypeApprovalRequired = "approval_required"
	TypePolicyRejected   = "policy_rejected"

	// What a run shows besides text: a file it sent into its chat
	// (artifact), a question with choices it asked there (ui, seed 004's
	// name for an interaction the client renders).
	TypeArtifact = "artifact"
	TypeUI       = "ui"

	// TypeRouteDecided says which agent profile answers a message and
	// why (seed 001's route_decided): Agent and Reason ("explicit",
	// "bound:<chat glob>" or "default").
	TypeRouteDecided = "route_decided"

	// TypeGuardrailFailed (seed 001): a run's output did not match the
	// JSON Schema its task or skill declared, even after the model's
	// repairs, and was not delivered. TaskName names the task (Skill the
	// skill), ErrorMessage says why.
	TypeGuardrailFailed = "guardrail_failed"

	// Background jobs: a job_started when a tool call is detached, a
	// job_finished when it ends (state done, failed, cancelled or
	// interrupted).
	TypeJobStarted  = "job_started"
	TypeJobFinished = "job_finished"

	// Seed 001's session plane (§9.1): session_created when a chat's
	// in-memory session is first built and its log held nothing before,
	// session_resumed when it is rebuilt from its log (after a restart or
	// an eviction); dispatch_started when a turn (or a sub-agent) is
	// handed to an agent run, dispatch_completed when that run ends.
	// Their fields are in Session and Dispatch.
	TypeSessionCreated    = "session_created"
	TypeSessionResumed    = "session_resumed"
	TypeDispatchStarted   = "dispatch_started"
	TypeDispatchCompleted = "dispatch_completed"

	// TypeConfigReloaded: ship.json (or .env) was read again and its
	// changes took effect; Settings names what changed, Restart what of
	// that waits for a restart. A refused reload is an error event with
	// ErrorCode ErrConfigInvalid.
	TypeConfigReloaded = "config_reloaded"
)

// ErrConfigInvalid is the errorCode of the error event of a refused
// configuration reload: the last good configuration stays in force.
const ErrConfigInvalid = "CONFIG_INVALID"

// Event is one event of a run. Which fields are sent depends on Type; see
// MarshalJSON. Every event has a timestamp and, when it belongs to a chat,
// its chatKey.
type Event struct {
	// ID orders events on the bus; SSE sends it as the frame id so a
	// client can resume with Last-Event-ID.
	ID        uint64
	Type      string
	Timestamp int64 // ms since the Unix epoch
	TaskID    string
	ChatKey   string
	Channel   string

	TriggerMessageID string // task_started
	TaskName         string // task_started, guardrail_failed
	UserMessageID    string // user_message_routed, error

	MessageID string // content
	Index     int    // content: 0, 1, … and -1 for the end of the message
	Content   string // content

	CallID    string        // ability_*
	AbilityID string        // ability_*: the tool's name
	Input     string        // ability_request: raw JSON arguments
	Result    *InvokeResult // ability_response

	DurationMS int64  // task_completed
	Usage      *Usage // task_completed, when the provider reported it

	ErrorCode    string // error
	ErrorMessage string // error, guardrail_failed

	Tool   string // tool_*, approval_required, policy_rejected
	Output string // tool_result, tool_error: what the tool returned
	Reason string // policy_rejected, approval_required: why it did not run
	// ApprovalCode is the code a person approves with (approval_required).
	ApprovalCode string
	// Replica is the replica whose run sent the event (cluster mode).
	Replica string

	Artifact *Artifact // artifact
	UI       *UI       // ui
	Job      *Job      // job_*

	Agent string // route_decided: the profile's name

	// Skill names the skill whose output schema failed (guardrail_failed;
	// TaskName names a task's).
	Skill string

	Session  *Session  // session_*
	Dispatch *Dispatch // dispatch_*

	// Settings and Restart are config_reloaded's: the settings that
	// changed, and those of them that need a restart (names, never
	// values).
	Settings []string
	Restart  []string
}

// Session is a session_* event's own part. Agent names the agent profile
// (or "sub-agent"), Restored how many messages session_resumed took
// back from the chat log; JobID is set for a sub-agent's session.
type Session struct {
	Agent    string `json:"agent"`
	Restored int    `json:"restoredMessages"`
	JobID    string `json:"jobId,omitempty"`
}

// Dispatch is a dispatch_* event's own part. For a sub-agent, JobID,
// ParentRequestID (the person's turn that started the chain), ParentJobID
// (a nested one's starter), Depth and LeaseID say where it stands.
type Dispatch struct {
	Agent           string `json:"agent"`
	Model           string `json:"model,omitempty"`
	QueueWaitMS     int64  `json:"queueWaitMs"`
	JobID           string `json:"jobId,omitempty"`
	ParentRequestID string `json:"parentRequestId,omitempty"`
	ParentJobID     string `json:"parentJobId,omitempty"`
	Depth           int    `json:"depth,omitempty"`
	LeaseID         string `json:"leaseId,omitempty"`

	// dispatch_completed: Outcome is ok, failed, cancelled or timeout;
	// Budget names the budget that stopped a sub-agent (steps, tokens).
	Outcome    string `json:"outcome,omitempty"`
	Budget     string `json:"budget,omitempty"`
	DurationMS int64  `json:"durationMs"`
	ToolCalls  int    `json:"toolCalls"`
	Tokens     int    `json:"tokens"`
}

// Job is a background job as its events tell it.
type Job struct {
	JobID string `json:"jobId"`
	Tool  string `json:"tool"`
	Label string `json:"label"`
	State string `json:"state"`
	// ExitCode and DurationMS are set on job_finished (-1: no exit code).
	ExitCode   *int  `json:"exitCode,omitempty"`
	DurationMS int64 `json:"durationMs,omitempty"`
	// LeaseID is the job's lease (seed 001 §5.3), LeaseExpired says the
	// job was reclaimed when it ran out (job_finished).
	LeaseID      string `json:"leaseId,omitempty"`
	LeaseExpired bool   `json:"leaseExpired,omitempty"`
	// CancelledBy names who cancelled it (job_finished, state cancelled).
	CancelledBy string `json:"cancelledBy,omitempty"`
}

// Artifact is a file a run sent into its chat, as the artifact event
// tells it: URL downloads it with the API's token.
type Artifact struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	MIME   string `json:"mimeType"`
	Size   int64  `json:"size"`
	URL    string `json:"url"`
	FileID string `json:"fileId,omitempty"`
}

// UI is a question with choices a run asked in its chat (the ui event):
// a client shows the choices and answers with one of them (POST
// /api/questions/{questionId}/answer) or the person types its number.
type UI struct {
	Kind       string   `json:"kind"` // "choice"
	QuestionID string   `json:"questionId"`
	Question   string   `json:"question"`
	Choices    []string `json:"choices"`
	// Anyone says anyone in the chat may answer, not only who was asked.
	Anyone    bool  `json:"anyone"`
	ExpiresAt int64 `json:"expiresAt"` // ms since the Unix epoch
}

// InvokeResult is the outcome of an ability call, in the stream's union
// shape: {type: success, result} | {type: error, error} | {type:
// invalid-ability|invalid-input|unknown-failure, message}.
type InvokeResult struct {
	Type    string `json:"type"`
	Result  string `json:"result,omitempty"`
	Error   string `json:"error,omitempty"`
	Message string `json:"message,omitempty"`
}

// Usage is the tokens a run used, as the provider reported them.
type Usage struct {
	PromptTokens     int `json:"promptTokens"`
	CompletionTokens int `json:"completionTokens"`
	// CachedPromptTokens is the part of PromptTokens read from the
	// provider's prompt cache.
	CachedPromptTokens int `json:"cachedPromptTokens"`
}

// MarshalJSON writes the fields of the event's type, no more: a content
// event always has index and content (index 0 and "" are meaningful), a
// task_completed event never has a stray empty content.
func (e Event) MarshalJSON() ([]byte, error) {
	m := map[string]any{"type": e.Type, "timestamp": e.Timestamp}
	opt := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	opt("taskId", e.TaskID)
	opt("chatKey", e.ChatKey)
	opt("channel", e.Channel)
	opt("replica", e.Replica)
	switch e.Type {
	case TypeTaskStarted:
		m["triggerMessageId"] = e.TriggerMessageID
		m["taskName"] = e.TaskName
	case TypeUserMessageRouted:
		m["userMessageId"] = e.UserMessageID
	case TypeContent:
		m["messageId"] = e.MessageID
		m["index"] = e.Index
		m["content"] = e.Content
	case TypeAbilityRequest:
		m["callId"] = e.CallID
		m["abilityId"] = e.AbilityID
		m["input"] = e.Input
	case TypeAbilityResponse:
		m["callId"] = e.CallID
		m["abilityId"] = e.AbilityID
		m["result"] = e.Result
	case TypeTaskCompleted:
		m["durationMs"] = e.DurationMS
		if e.Usage != nil {
			m["usage"] = e.Usage
		}
	case TypeError:
		opt("userMessageId", e.UserMessageID)
		m["errorCode"] = e.ErrorCode
		m["errorMessage"] = e.ErrorMessage
	case TypeRouteDecided:
		m["agent"] = e.Agent
		m["reason"] = e.Reason
	case TypeToolCall, TypeToolResult, TypeToolError, TypeApprovalRequired, TypePolicyRejected:
		// The run's task id is the requestId of ship's logs.
		opt("requestId", e.TaskID)
		m["callId"] = e.CallID
		m["tool"] = e.Tool
		m["input"] = e.Input
		opt("output", e.Output)
		opt("reason", e.Reason)
		opt("approvalCode", e.ApprovalCode)
	case TypeArtifact:
		opt("requestId", e.TaskID)
		if err := merge(m, e.Artifact); err != nil {
			return nil, err
		}
	case TypeUI:
		opt("requestId", e.TaskID)
		if err := merge(m, e.UI); err != nil {
			return nil, err
		}
	case TypeGuardrailFailed:
		opt("requestId", e.TaskID)
		opt("taskName", e.TaskName)
		opt("skill", e.Skill)
		m["errors"] = e.ErrorMessage
	case TypeJobStarted, TypeJobFinished:
		if err := merge(m, e.Job); err != nil {
			return nil, err
		}
	case TypeSessionCreated, TypeSessionResumed:
		opt("requestId", e.TaskID)
		if err := merge(m, e.Session); err != nil {
			return nil, err
		}
	case TypeDispatchStarted, TypeDispatchCompleted:
		opt("requestId", e.TaskID)
		if e.Dispatch == nil {
			break
		}
		if err := merge(m, e.Dispatch); err != nil {
			return nil, err
		}
		if e.Type == TypeDispatchStarted {
			// Only the end has these: a start is not "0 ms, no calls".
			delete(m, "durationMs")
			delete(m, "toolCalls")
			delete(m, "tokens")
		}
	case TypeConfigReloaded:
		m["changed"] = nonNil(e.Settings)
		m["needsRestart"] = nonNil(e.Restart)
	}
	return json.Marshal(m)
}

// nonNil makes an absent list an empty one on the wire.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// merge adds the JSON fields of v (a struct pointer; nil adds none) to m:
// an artifact's and a question's fields are the event's own, beside its
// type and chatKey.
func merge(m map[string]any, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding an event: %w", err)
	}
	var fields map[string]any
	if err := json.Unmarshal(b, &fields); err != nil {
		return fmt.Errorf("encoding an event: %w", err)
	}
	for k, v := range fields {
		if _, taken := m[k]; !taken {
			m[k] = v
		}
	}
	return nil
}

// Final reports whether e ends its run (task_completed or error).
func (e Event) Final() bool { return e.Type == TypeTaskCompleted || e.Type == TypeError }

// Redacted returns e with redact applied to every field that can carry
// what a tool was given or gave back (input, output, reasons, results,
// error text). It is the one redaction step of the event stream, run
// before an event is published, so every subscriber (SSE, the console,
// other replicas) sees the same hidden text. Content is left alone: it is
// the reply as the user sees it, streamed in pieces that a secret may
// straddle, and the model never had ship's secrets to write in it.
func (e Event) Redacted(redact func(string) string) Event {
	if redact == nil {
		return e
	}
	// Most events (every streamed piece of content) carry none of these
	// fields: an empty one has nothing to hide and costs no scan.
	inner := redact
	redact = func(s string) string {
		if s == "" {
			return s
		}
		return inner(s)
	}
	e.Input = redact(e.Input)
	e.Output = redact(e.Output)
	e.Reason = redact(e.Reason)
	e.ErrorMessage = redact(e.ErrorMessage)
	if e.Result != nil {
		r := *e.Result
		r.Result, r.Error, r.Message = redact(r.Result), redact(r.Error), redact(r.Message)
		e.Result = &r
	}
	return e
}
