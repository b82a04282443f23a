package agent

import (
	"context"
	"sort"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/runtime/dispatch"
)

// DefaultMaxInjected caps the history messages one run may inject.
const DefaultMaxInjected = 120

// HistoryMessage is an older chat message a tool wants the model to see.
type HistoryMessage struct {
	Role string // "user" or "assistant"
	Text string
	TS   int64 // ms since epoch; orders injected messages
}

// ToolExecutionContext is the state of one run that tools may act on: the
// in-flight messages and where the current user message sits in them. It is
// what the original kept in AsyncLocalStorage; here it travels in the context.
type ToolExecutionContext struct {
	mu          sync.Mutex
	messages    []llms.MessageContent
	userIndex   int     // index of the current user message
	injectStart int     // first injected message (== userIndex when none)
	injectedTS  []int64 // ts of each injected message, in order
	seen        map[string]struct{}
	maxInjected int
}

func newToolExecutionContext(messages []llms.MessageContent, userIndex, maxInjected int) *ToolExecutionContext {
	ec := &ToolExecutionContext{
		messages:    messages,
		userIndex:   userIndex,
		injectStart: userIndex,
		seen:        make(map[string]struct{}),
		maxInjected: maxInjected,
	}
	// Everything already in front of the model counts as seen, the current
	// user message included, so history loading never repeats it.
	for _, m := range messages {
		if text := textOf(m); text != "" {
			ec.seen[fingerprint(m.Role, text)] = struct{}{}
		}
		// A reply delivered by a tool (chat_send) sits in memory as the
		// call's "text" argument, and in the log as an assistant entry.
		for _, p := range m.Parts {
			if c, ok := p.(llms.ToolCall); ok && c.FunctionCall != nil {
				if text := visibleText(c.FunctionCall.Arguments); text != "" {
					ec.seen[fingerprint(llms.ChatMessageTypeAI, text)] = struct{}{}
				}
			}
		}
	}
	return ec
}

func withToolExecutionContext(ctx context.Context, ec *ToolExecutionContext) context.Context {
	run, _ := dispatch.RunFrom(ctx)
	run.Exec = ec
	return dispatch.WithRun(ctx, run)
}

// ToolExecutionFromContext returns the execution context of the run that is
// calling a tool.
func ToolExecutionFromContext(ctx context.Context) (*ToolExecutionContext, bool) {
	run, _ := dispatch.RunFrom(ctx)
	ec, ok := run.Exec.(*ToolExecutionContext)
	return ec, ok
}

// CurrentUserText is the current request's user text.
func (ec *ToolExecutionContext) CurrentUserText() string {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	return textOf(ec.messages[ec.userIndex])
}

// Remaining is how many more messages this run may inject.
func (ec *ToolExecutionContext) Remaining() int {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	return ec.maxInjected - len(ec.injectedTS)
}

// InjectHistory inserts msgs just before the current user message, keeping
// all injected messages in time order, skipping any message already in front
// of the model (the current one included) and stopping at the run's cap. It
// returns how many it inserted. The user's own text is never modified.
func (ec *ToolExecutionContext) InjectHistory(msgs []HistoryMessage) int {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	inserted := 0
	for _, h := range msgs {
		if len(ec.injectedTS) >= ec.maxInjected {
			break
		}
		role := llms.ChatMessageTypeHuman
		if h.Role == "assistant" {
			role = llms.ChatMessageTypeAI
		}
		fp := fingerprint(role, h.Text)
		if _, dup := ec.seen[fp]; dup || h.Text == "" {
			continue
		}
		ec.seen[fp] = struct{}{}
		// Position among the injected block by time, stable for equal ts.
		pos := sort.Search(len(ec.injectedTS), func(i int) bool { return ec.injectedTS[i] > h.TS })
		ec.injectedTS = append(ec.injectedTS, 0)
		copy(ec.injectedTS[pos+1:], ec.injectedTS[pos:])
		ec.injectedTS[pos] = h.TS
		at := ec.injectStart + pos
		ec.messages = append(ec.messages, llms.MessageContent{})
		copy(ec.messages[at+1:], ec.messages[at:])
		ec.messages[at] = llms.TextParts(role, h.Text)
		ec.userIndex++
		inserted++
	}
	return inserted
}

// snapshot returns a copy of the in-flight messages for one model call.
func (ec *ToolExecutionContext) snapshot() []llms.MessageContent {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	return append([]llms.MessageContent(nil), ec.messages...)
}

func (ec *ToolExecutionContext) append(msgs ...llms.MessageContent) {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	ec.messages = append(ec.messages, msgs...)
}

// dropHistory removes the in-flight history messages in [from, to) (they lie
// between the system message and the injected block) after a context-length
// error.
func (ec *ToolExecutionContext) dropHistory(from, to int) {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	n := to - from
	ec.messages = append(ec.messages[:from], ec.messages[to:]...)
	ec.userIndex -= n
	ec.injectStart -= n
}

// produced returns the messages the run added after the user message.
func (ec *ToolExecutionContext) produced() []llms.MessageContent {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	return append([]llms.MessageContent(nil), ec.messages[ec.userIndex+1:]...)
}

func fingerprint(role llms.ChatMessageType, text string) string {
	return string(role) + "\x00" + text
}

// textOf joins the text parts of a message.
func textOf(m llms.MessageContent) string {
	var s string
	for _, p := range m.Parts {
		if t, ok := p.(llms.TextContent); ok {
			s += t.Text
		}
	}
	return s
}
