package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
)

// auditOutputChars bounds the output kept in a tool entry of the chat log:
// enough to see what happened, not a copy of every file a command printed.
const auditOutputChars = 2000

// audit writes every tool call of a run and its outcome as a role "tool"
// entry in the chat log, so an audit (and chat_load_history) can see what
// ran, what was refused and what waits for approval. chat_send is the one
// exception: the reply it delivered is the assistant entry already.
type audit struct {
	store  chat.Log
	redact func(string) string
	req    dispatch.RequestContext
	// meta is added to every entry (a sub-agent's name).
	meta map[string]any

	mu      sync.Mutex
	refusal map[string]string // callID → policy_rejected | approval_required
}

func newAudit(store chat.Log, redact func(string) string, req dispatch.RequestContext) *audit {
	if redact == nil {
		redact = func(s string) string { return s }
	}
	return &audit{store: store, redact: redact, req: req, refusal: map[string]string{}}
}

func (a *audit) step(ctx context.Context, ev agent.StepEvent) {
	switch ev.Type {
	case agent.StepPolicyRejected, agent.StepApprovalRequired:
		a.mu.Lock()
		a.refusal[ev.CallID] = ev.Type
		a.mu.Unlock()
	case agent.StepToolResult:
		if ev.Tool == dispatch.ChatSendTool || a.store == nil {
			return
		}
		a.mu.Lock()
		refusal := a.refusal[ev.CallID]
		delete(a.refusal, ev.CallID)
		a.mu.Unlock()
		a.record(ctx, ev, refusal)
	}
}

func (a *audit) record(ctx context.Context, ev agent.StepEvent, refusal string) {
	outcome := "ok"
	switch {
	case refusal != "":
		outcome = refusal
	case !ev.OK:
		outcome = "error"
	}
	input := a.redact(ev.Input)
	output := clip(a.redact(ev.Output), auditOutputChars)
	meta := map[string]any{"tool": ev.Tool, "callId": ev.CallID, "input": json.RawMessage(validJSON(input)), "outcome": outcome, "output": output}
	for k, v := range a.meta {
		meta[k] = v
	}
	_, err := a.store.Append(ctx, chat.ChatLogEntryV1{
		Channel: a.req.Channel, ChatID: a.req.ChatID, ChatKey: a.req.ChatKey, UserID: a.req.UserID,
		Role: chat.RoleTool, Text: fmt.Sprintf("%s %s → %s", ev.Tool, clip(input, 200), outcome), Meta: meta,
	})
	if err != nil {
		zerolog.Ctx(ctx).Error().Err(err).Str("tool", ev.Tool).Msg("logging a tool call")
	}
}

// validJSON keeps raw JSON that parses and quotes anything else, so one
// odd argument string cannot break the log line.
func validJSON(s string) string {
	if json.Valid([]byte(s)) {
		return s
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// clip cuts s to n characters, saying so.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + fmt.Sprintf("… (%d more characters)", len(r)-n)
}

// redactCalls hides secrets in the tool calls a run reports (/api/execute's
// toolCalls): the arguments are decoded JSON, so every string in them,
// keys included, is redacted where it sits.
func redactCalls(calls []agent.ToolCallRecord, redact func(string) string) []agent.ToolCallRecord {
	if redact == nil {
		return calls
	}
	out := make([]agent.ToolCallRecord, len(calls))
	for i, c := range calls {
		out[i] = agent.ToolCallRecord{Tool: c.Tool, Output: redact(c.Output)}
		if c.Input != nil {
			out[i].Input, _ = redactValue(c.Input, redact).(map[string]any)
		}
	}
	return out
}

func redactValue(v any, redact func(string) string) any {
	switch v := v.(type) {
	case string:
		return redact(v)
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[redact(k)] = redactValue(x, redact)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, x := range v {
			s[i] = redactValue(x, redact)
		}
		return s
	}
	return v
}
