package agent_test

// The runtime's tool loop against Claude: langchaingo's real Anthropic
// client (built by runtime/llm, as `ship start` builds it) talking to the
// loopback fake of the Messages API, with the real tools, ChatStore and
// dispatcher registry. The package is agent_test because tools imports
// agent.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/internal/fakeanthropic"
	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/llm"
	"github.com/shipmyagent/ship/tools"
)

const channel = "telegram"

// rig is one runtime wired as in production around the Anthropic fake.
type rig struct {
	t     *testing.T
	fake  *fakeanthropic.Server
	rt    *agent.Runtime
	store *chat.Store
	d     *dispatch.Deliverer
	log   zerolog.Logger

	mu   sync.Mutex
	sent []string // what the platform showed the user
	msgs int
}

type rigOptions struct {
	handler   fakeanthropic.Handler
	stream    bool
	maxTokens int
}

func newRig(t *testing.T, o rigOptions) *rig {
	t.Helper()
	fake, err := fakeanthropic.Start(o.handler)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	model, err := llm.New(llm.Config{Provider: llm.ProviderAnthropic, Model: "claude-test", BaseURL: fake.BaseURL(), APIKey: "test-key"})
	if err != nil {
		t.Fatal(err)
	}
	store, err := chat.OpenStore(chat.StoreOptions{Dir: t.TempDir(), Durability: chat.DurabilityNone})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	reg := dispatch.NewRegistry()
	r := &rig{t: t, fake: fake, store: store, d: &dispatch.Deliverer{Registry: reg, Store: store},
		log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)}
	reg.Register(channel, dispatch.DispatcherFunc(func(_ context.Context, _ dispatch.RequestContext, text string) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.sent = append(r.sent, text)
		return nil
	}))
	r.rt, err = agent.New(agent.Options{Model: model, Tools: tools.Default(store, r.d), Store: store, Stream: o.stream,
		MaxTokens: o.maxTokens, RetryBackoff: time.Millisecond, Logger: r.log})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// outcome is what one user message led to.
type outcome struct {
	res      agent.AgentResult
	err      error
	fallback bool
	steps    []agent.StepEvent
}

// ask handles one user message as the engine's runner does: log it, run
// the agent with the request and registry in the context, then apply the
// final-output fallback.
func (r *rig) ask(text string) outcome {
	r.t.Helper()
	r.mu.Lock()
	r.msgs++
	req := dispatch.RequestContext{Channel: channel, ChatID: "42", ChatKey: "telegram:chat:42", UserID: "u1",
		ChatType: "private", MessageID: fmt.Sprintf("m%d", r.msgs)}
	r.mu.Unlock()
	ctx := dispatch.WithRequest(context.Background(), req)
	if _, err := r.store.Append(ctx, chat.ChatLogEntryV1{Channel: channel, ChatID: req.ChatID, ChatKey: req.ChatKey,
		Role: chat.RoleUser, Text: text, MessageID: req.MessageID}); err != nil {
		r.t.Fatal(err)
	}
	var o outcome
	var mu sync.Mutex
	o.res, o.err = r.rt.Run(ctx, agent.AgentRunInput{ChatKey: req.ChatKey, Route: req, Instructions: text,
		OnStep: func(_ context.Context, ev agent.StepEvent) {
			mu.Lock()
			defer mu.Unlock()
			o.steps = append(o.steps, ev)
		}})
	sent, err := r.d.SendFinalOutputIfNeeded(ctx, o.res.Output, o.res.Delivered, r.log)
	if err != nil {
		r.t.Fatal(err)
	}
	o.fallback = sent
	return o
}

func (r *rig) shown() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.sent...)
}

func (o outcome) tools() string {
	var names []string
	for _, c := range o.res.ToolCalls {
		b, _ := json.Marshal(c.Input)
		names = append(names, c.Tool+string(b))
	}
	return strings.Join(names, " ")
}

func (o outcome) stepText(typ string) string {
	var b strings.Builder
	for _, ev := range o.steps {
		if ev.Type == typ {
			b.WriteString(ev.Text)
		}
	}
	return b.String()
}

func toolUse(name string, input any) fakeanthropic.ToolUse {
	b, _ := json.Marshal(input)
	return fakeanthropic.ToolUse{Name: name, Input: string(b)}
}

func bothModes(t *testing.T, f func(t *testing.T, stream bool)) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			t.Parallel()
			f(t, stream)
		})
	}
}

// TestAnthropicTextThenChatSendDeliversOnce is Claude's usual answer: a
// sentence, then chat_send. The reply must arrive once, through chat_send,
// and the sentence must not follow it through the fallback.
func TestAnthropicTextThenChatSendDeliversOnce(t *testing.T) {
	bothModes(t, func(t *testing.T, stream bool) {
		r := newRig(t, rigOptions{stream: stream, handler: func(fakeanthropic.Request) fakeanthropic.Response {
			return fakeanthropic.Response{Text: "Let me send that.",
				ToolUses:    []fakeanthropic.ToolUse{toolUse("chat_send", map[string]string{"text": "the reply"})},
				InputTokens: 120, OutputTokens: 30}
		}})
		o := r.ask("hello")
		if o.err != nil || !o.res.Success {
			t.Fatalf("run failed: %+v %v", o.res, o.err)
		}
		if got := r.shown(); len(got) != 1 || got[0] != "the reply" {
			t.Fatalf("user saw %q, want only \"the reply\"", got)
		}
		if o.fallback || !o.res.Delivered {
			t.Errorf("fallback = %v, delivered = %v", o.fallback, o.res.Delivered)
		}
		if got := o.tools(); got != `chat_send{"text":"the reply"}` {
			t.Errorf("tool calls = %s", got)
		}
		// One model call: the reply was delivered, so the loop stopped. Each
		// of langchaingo's per-block choices repeats the message's usage; it
		// counts once.
		if n := r.fake.RequestCount(); n != 1 {
			t.Errorf("model called %d times, want 1", n)
		}
		if o.res.Usage != (agent.Usage{PromptTokens: 120, CompletionTokens: 30}) {
			t.Errorf("usage = %+v, want 120/30", o.res.Usage)
		}
		if got := o.stepText(agent.StepText); got != "Let me send that." {
			t.Errorf("text step = %q", got)
		}
		if stream {
			if got := o.stepText(agent.StepTextDelta); got != "Let me send that." {
				t.Errorf("streamed text = %q", got)
			}
		}
		req := r.fake.Requests()[0]
		if req.MaxTokens != llm.DefaultMaxTokens || req.Stream != stream || !req.HasTool("chat_send") ||
			!req.HasTool("chat_load_history") || req.LastUser() != "hello" || !strings.Contains(req.System, "telegram:chat:42") {
			t.Errorf("request: max_tokens %d stream %v tools %+v last user %q", req.MaxTokens, req.Stream, req.Tools, req.LastUser())
		}
	})
}

// TestAnthropicTwoToolUsesRunInOrder: two tool_use blocks in one answer
// both run, in order; their results reach the next request under the right
// tool_use ids; two chat_sends in one answer both arrive, in order; and the
// next message's request, which carries all of it as history, is one the
// API accepts.
func TestAnthropicTwoToolUsesRunInOrder(t *testing.T) {
	bothModes(t, func(t *testing.T, stream bool) {
		r := newRig(t, rigOptions{stream: stream, maxTokens: 1234, handler: func(req fakeanthropic.Request) fakeanthropic.Response {
			switch len(req.ToolResults()) {
			case 0:
				return fakeanthropic.Response{Text: "Looking.", ToolUses: []fakeanthropic.ToolUse{
					toolUse("chat_load_history", map[string]int{"limit": 5}),
					toolUse("chat_load_history", map[string]string{"keyword": "zebra"}),
				}, InputTokens: 100, OutputTokens: 10}
			default:
				return fakeanthropic.Response{ToolUses: []fakeanthropic.ToolUse{
					toolUse("chat_send", map[string]string{"text": "part one"}),
					toolUse("chat_send", map[string]string{"text": "part two"}),
				}, InputTokens: 200, OutputTokens: 20}
			}
		}})
		o := r.ask("tell me about zebras")
		if o.err != nil || !o.res.Success {
			t.Fatalf("run failed: %+v %v", o.res, o.err)
		}
		want := `chat_load_history{"limit":5} chat_load_history{"keyword":"zebra"} chat_send{"text":"part one"} chat_send{"text":"part two"}`
		if got := o.tools(); got != want {
			t.Errorf("tool calls\n%s\nwant\n%s", got, want)
		}
		if got := r.shown(); strings.Join(got, "|") != "part one|part two" || o.fallback {
			t.Errorf("user saw %q (fallback %v), want both parts in order", got, o.fallback)
		}
		if o.res.Usage != (agent.Usage{PromptTokens: 300, CompletionTokens: 30}) {
			t.Errorf("usage = %+v, want 300/30 (each call once)", o.res.Usage)
		}
		reqs := r.fake.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d model calls, want 2", len(reqs))
		}
		second := reqs[1]
		uses, results := second.ToolUses(), second.ToolResults()
		if len(uses) != 2 || len(results) != 2 {
			t.Fatalf("second request: uses %+v, results %+v", uses, results)
		}
		for i, u := range uses {
			if results[i].ToolUseID != u.ID || results[i].Text != o.res.ToolCalls[i].Output || u.Name != "chat_load_history" {
				t.Errorf("call %d: use %+v answered by %+v (tool output %s)", i, u, results[i], o.res.ToolCalls[i].Output)
			}
		}
		if uses[0].ID == uses[1].ID || string(uses[1].Input) != `{"keyword":"zebra"}` {
			t.Errorf("uses = %+v", uses)
		}
		var assistantText []string
		for _, m := range second.Messages {
			if m.Role == "assistant" && m.Text() != "" {
				assistantText = append(assistantText, m.Text())
			}
		}
		if strings.Join(assistantText, "|") != "Looking." || second.MaxTokens != 1234 {
			t.Errorf("second request: assistant text %q, max_tokens %d", assistantText, second.MaxTokens)
		}

		// The next message carries this turn as history: four tool calls
		// with their results, which the API must accept.
		r.fake.SetHandler(nil)
		o = r.ask("thanks")
		if o.err != nil || !o.res.Delivered {
			t.Fatalf("second message: %+v %v", o.res, o.err)
		}
		if got := r.shown(); len(got) != 3 || got[2] != "echo: thanks" {
			t.Errorf("user saw %q", got)
		}
		paired := 0
		for _, m := range r.fake.Requests()[2].Messages {
			paired += len(m.ToolResults())
		}
		if paired != 4 {
			t.Errorf("history carried %d tool results, want 4", paired)
		}
	})
}

// TestAnthropicEmptyAnswerEndsTheRun: after a tool result Claude may answer
// with no content at all (stop_reason end_turn). That is an empty answer,
// not a failed model call: nothing is sent and the run succeeds.
func TestAnthropicEmptyAnswerEndsTheRun(t *testing.T) {
	bothModes(t, func(t *testing.T, stream bool) {
		r := newRig(t, rigOptions{stream: stream, handler: func(req fakeanthropic.Request) fakeanthropic.Response {
			if len(req.ToolResults()) == 0 {
				return fakeanthropic.Response{ToolUses: []fakeanthropic.ToolUse{toolUse("chat_load_history", map[string]int{"limit": 3})}}
			}
			return fakeanthropic.Response{}
		}})
		o := r.ask("anything?")
		if o.err != nil || !o.res.Success || o.res.Output != "" {
			t.Fatalf("run: %+v %v, want a successful empty run", o.res, o.err)
		}
		if got := r.shown(); len(got) != 0 || o.fallback {
			t.Errorf("user saw %q", got)
		}
		if n := r.fake.RequestCount(); n != 2 {
			t.Errorf("model called %d times, want 2", n)
		}
	})
}

// TestAnthropicOverloadedIsRetried: Anthropic's 529 overloaded_error, as
// langchaingo reports it, counts as transient and is retried.
func TestAnthropicOverloadedIsRetried(t *testing.T) {
	var calls atomic.Int32
	r := newRig(t, rigOptions{handler: func(req fakeanthropic.Request) fakeanthropic.Response {
		if calls.Add(1) == 1 {
			return fakeanthropic.Response{Status: 529}
		}
		return fakeanthropic.EchoChatSend(req)
	}})
	o := r.ask("hi")
	if o.err != nil || !o.res.Delivered {
		t.Fatalf("run: %+v %v", o.res, o.err)
	}
	if got := r.shown(); len(got) != 1 || got[0] != "echo: hi" || r.fake.RequestCount() != 2 {
		t.Errorf("user saw %q after %d calls", got, r.fake.RequestCount())
	}
}
