package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/events"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/queue"
)

// runEvents turns one run's steps into the event stream's events. Content
// events carry what the user sees: the model's own text, and the text of
// each chat_send call (streamed from its arguments when the provider
// streams, else whole once delivered).
type runEvents struct {
	bus     *events.Bus
	redact  func(string) string // applied to every event before it is published
	base    events.Event        // taskId, chatKey, channel
	trigger string

	mu       sync.Mutex
	textStep int // step whose text message is open (0: none)
	textIdx  int
	replies  map[string]*replyStream // by step/callIndex
	calls    map[int]int             // tool_call events seen per step
	shown    map[string]bool         // texts already sent as content
	retried  map[int]int             // model calls made again, per step
	arts     []dispatch.Artifact     // files the run sent
	said     []string                // texts the chat got
	// held says the run's output is held for its check (guardrail.go):
	// its text is not shown as content until it passed; nil: never.
	held func() bool
	// agent and model name the run's agent profile and model in the
	// session-plane events (session.go).
	agent, model string
}

type replyStream struct {
	id   string
	idx  int
	sent int // runes of the text already published
}

func newRunEvents(bus *events.Bus, item queue.Item[ingress.Job], redact func(string) string) *runEvents {
	return &runEvents{
		bus:     bus,
		redact:  redact,
		base:    events.Event{TaskID: item.ID, ChatKey: item.ChatKey, Channel: item.Value.Route.Channel},
		trigger: item.Value.Route.MessageID,
		replies: map[string]*replyStream{},
		calls:   map[int]int{},
		shown:   map[string]bool{},
		retried: map[int]int{},
	}
}

func (r *runEvents) publish(e events.Event) {
	if r.bus == nil {
		return
	}
	e.TaskID, e.ChatKey, e.Channel = r.base.TaskID, r.base.ChatKey, r.base.Channel
	r.bus.Publish(e.Redacted(r.redact))
}

func (r *runEvents) started(instructions string) {
	r.publish(events.Event{Type: events.TypeUserMessageRouted, UserMessageID: r.trigger})
	name := []rune(strings.Join(strings.Fields(instructions), " "))
	if len(name) > 20 {
		name = name[:20]
	}
	r.publish(events.Event{Type: events.TypeTaskStarted, TriggerMessageID: r.trigger, TaskName: string(name)})
}

func (r *runEvents) content(id string, idx int, text string) {
	r.publish(events.Event{Type: events.TypeContent, MessageID: id, Index: idx, Content: text})
}

// step handles one runtime step event.
func (r *runEvents) step(_ context.Context, ev agent.StepEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held != nil && r.held() && (ev.Type == agent.StepTextDelta || ev.Type == agent.StepText) {
		return
	}
	switch ev.Type {
	case agent.StepTextDelta:
		if r.textStep != ev.Step {
			r.textStep, r.textIdx = ev.Step, 0
		}
		r.content(r.textID(ev.Step), r.textIdx, ev.Text)
		r.textIdx++
	case agent.StepText:
		if r.textStep != ev.Step { // not streamed: the whole text at once
			r.content(r.textID(ev.Step), 0, ev.Text)
		}
		r.content(r.textID(ev.Step), -1, "")
		r.textStep = 0
		r.shown[ev.Text] = true
	case agent.StepAttemptRestarted:
		// The failed attempt's messages stay as far as they got; the new
		// attempt's text comes as messages of their own (new ids), so no
		// client appends it to the old.
		r.retried[ev.Step]++
		if r.textStep == ev.Step {
			r.textStep = 0
		}
		prefix := fmt.Sprintf("%d/", ev.Step)
		for k := range r.replies {
			if strings.HasPrefix(k, prefix) {
				delete(r.replies, k)
			}
		}
	case agent.StepToolCall:
		r.publish(events.Event{Type: events.TypeAbilityRequest, CallID: ev.CallID, AbilityID: ev.Tool, Input: ev.Input})
		r.publish(events.Event{Type: events.TypeToolCall, CallID: ev.CallID, Tool: ev.Tool, Input: ev.Input})
	case agent.StepPolicyRejected:
		r.publish(events.Event{Type: events.TypePolicyRejected, CallID: ev.CallID, Tool: ev.Tool, Input: ev.Input, Reason: ev.Text})
	case agent.StepApprovalRequired:
		var out struct {
			Code string `json:"approvalCode"`
		}
		_ = json.Unmarshal([]byte(ev.Output), &out)
		r.publish(events.Event{Type: events.TypeApprovalRequired, CallID: ev.CallID, Tool: ev.Tool, Input: ev.Input,
			Reason: ev.Text, ApprovalCode: out.Code})
	case agent.StepToolResult:
		idx := r.calls[ev.Step]
		r.calls[ev.Step]++
		r.publish(events.Event{Type: events.TypeAbilityResponse, CallID: ev.CallID, AbilityID: ev.Tool, Result: invokeResult(ev)})
		done := events.Event{Type: events.TypeToolResult, CallID: ev.CallID, Tool: ev.Tool, Input: ev.Input, Output: ev.Output}
		if !ev.OK {
			done.Type = events.TypeToolError
		}
		r.publish(done)
		if ev.Tool == dispatch.ChatSendTool && (r.held == nil || !r.held()) {
			r.replyDone(fmt.Sprintf("%d/%d", ev.Step, idx), ev)
		}
	}
}

// replyText publishes what is new in text, the reply the step's call
// number idx has written so far (see dispatch.ReplyTexts).
func (r *runEvents) replyText(step, idx int, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := fmt.Sprintf("%d/%d", step, idx)
	rs := r.replies[key]
	if rs == nil {
		rs = &replyStream{id: r.replyID(step, idx)}
		r.replies[key] = rs
	}
	if runes := []rune(text); len(runes) > rs.sent {
		r.content(rs.id, rs.idx, string(runes[rs.sent:]))
		rs.idx++
		rs.sent = len(runes)
	}
}

// replyDone closes a chat_send message: published whole if it was not
// streamed (and delivered), ended with index -1 either way.
func (r *runEvents) replyDone(key string, ev agent.StepEvent) {
	rs := r.replies[key]
	var args struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal([]byte(ev.Input), &args)
	if rs == nil {
		if !ev.OK {
			return // nothing reached the user, nothing to show
		}
		rs = &replyStream{id: r.replyID(ev.Step, r.calls[ev.Step]-1)}
		r.content(rs.id, 0, args.Text)
	}
	r.content(rs.id, -1, "")
	if ev.OK {
		r.shown[args.Text] = true
	}
}

// fallback shows the final-output fallback's text unless it was shown as
// the model's text already.
func (r *runEvents) fallback(text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.shown[text] {
		return
	}
	id := r.base.TaskID + "-final"
	r.content(id, 0, text)
	r.content(id, -1, "")
}

func (r *runEvents) finished(res agent.AgentResult, err error, durationMS int64) {
	if err != nil {
		r.publish(events.Event{Type: events.TypeError, UserMessageID: r.trigger, ErrorCode: errorCode(err), ErrorMessage: res.Output})
		return
	}
	e := events.Event{Type: events.TypeTaskCompleted, DurationMS: durationMS}
	if u := res.Usage; u.PromptTokens+u.CompletionTokens > 0 {
		e.Usage = &events.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, CachedPromptTokens: u.CachedPromptTokens}
	}
	r.publish(e)
}

// undelivered ends the run with an error event: a reply did not reach the
// user (the platform refused it, by its reply rules or otherwise) and
// nothing was delivered after it. The message is the chat log's line: the
// platform's reason, and which part failed when some did arrive.
func (r *runEvents) undelivered(u dispatch.Undelivered) {
	code := "DELIVERY_FAILED"
	switch {
	case errors.Is(u.Err, dispatch.ErrReplyExpired):
		code = "REPLY_WINDOW_CLOSED"
	case errors.Is(u.Err, dispatch.ErrReplyLimit):
		code = "REPLY_LIMIT_REACHED"
	}
	r.publish(events.Event{Type: events.TypeError, UserMessageID: r.trigger, ErrorCode: code, ErrorMessage: u.String()})
}

func (r *runEvents) textID(step int) string {
	return fmt.Sprintf("%s-t%d", r.base.TaskID, step) + r.attemptSuffix(step)
}

func (r *runEvents) replyID(step, idx int) string {
	return fmt.Sprintf("%s-r%d-%d", r.base.TaskID, step, idx) + r.attemptSuffix(step)
}

// attemptSuffix tells the messages of a step's model call made again from
// those of the attempts before it.
func (r *runEvents) attemptSuffix(step int) string {
	if n := r.retried[step]; n > 0 {
		return fmt.Sprintf("-a%d", n)
	}
	return ""
}

func errorCode(err error) string {
	switch {
	case err == nil:
		return ""
	case strings.Contains(err.Error(), context.DeadlineExceeded.Error()):
		return "TIMEOUT"
	case strings.Contains(err.Error(), "running model"):
		return "LLM_FAILED"
	default:
		return "RUN_FAILED"
	}
}

// invokeResult maps a tool result to the stream's InvokeResult union.
func invokeResult(ev agent.StepEvent) *events.InvokeResult {
	if ev.OK {
		return &events.InvokeResult{Type: "success", Result: ev.Output}
	}
	var out struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal([]byte(ev.Output), &out)
	switch {
	case strings.HasPrefix(out.Error, "unknown tool"):
		return &events.InvokeResult{Type: "invalid-ability", Message: out.Error}
	case strings.HasPrefix(out.Error, "arguments"):
		return &events.InvokeResult{Type: "invalid-input", Message: out.Error}
	case out.Error == "":
		return &events.InvokeResult{Type: "unknown-failure", Message: ev.Output}
	}
	return &events.InvokeResult{Type: "error", Error: out.Error}
}

// refusedEvent publishes an error event for a message the limit or the
// queue turned away: whoever watches the stream sees it was not taken,
// instead of a message that simply never gets an answer.
func refusedEvent(bus *events.Bus) func(context.Context, ingress.Submission, error) {
	return func(_ context.Context, s ingress.Submission, err error) {
		code := ingress.RefusalCode(err)
		if code == "" {
			code = "NOT_ACCEPTED"
		}
		req := s.Request()
		bus.Publish(events.Event{Type: events.TypeError, TaskID: s.ID, ChatKey: s.ChatKey, Channel: req.Channel,
			UserMessageID: s.Message.MessageID, ErrorCode: code, ErrorMessage: "not answered: " + err.Error()})
	}
}

// Artifact implements dispatch.Watcher: a file the run sent is an
// artifact event, and is listed in the run's result.
func (r *runEvents) Artifact(a dispatch.Artifact) {
	r.mu.Lock()
	r.arts = append(r.arts, a)
	r.mu.Unlock()
	r.publish(events.Event{Type: events.TypeArtifact, Artifact: &events.Artifact{
		Name: a.Name, Kind: a.Kind, MIME: a.MIME, Size: a.Bytes, URL: a.URL, FileID: a.FileID,
	}})
}

// Asked implements dispatch.Watcher: a question the run asked is a ui
// event, which a client shows as buttons.
func (r *runEvents) Asked(q dispatch.Question) {
	r.publish(events.Event{Type: events.TypeUI, UI: &events.UI{
		Kind: "choice", QuestionID: q.ID, Question: q.Text, Choices: q.Choices, Anyone: q.Anyone, ExpiresAt: q.Expires,
	}})
}

// Replied implements dispatch.Watcher: the run's result lists what the
// chat got.
func (r *runEvents) Replied(text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.said = append(r.said, text)
}

// delivered are the texts the chat got from the run so far.
func (r *runEvents) delivered() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.said...)
}

// artifacts are the files the run sent so far.
func (r *runEvents) artifacts() []dispatch.Artifact {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]dispatch.Artifact(nil), r.arts...)
}
