package agent_test

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeanthropic"
	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/dispatch"
)

// TestAnthropicStreamsToolInput: Claude writes a tool call's input as
// input_json_delta events, which langchaingo's client keeps to itself. A
// streamed run still reports them as tool_call_delta steps, numbered by
// the answer's tool calls (the text block before them is no call), and
// joined they are the input exactly as Claude sent it, which is also the
// call's final input (langchaingo's own would be re-encoded: < and &
// escaped, keys sorted).
func TestAnthropicStreamsToolInput(t *testing.T) {
	const history = `{"limit":3}`
	const send = `{"text":"a <b>slow</b> & careful reply, written piece by piece"}`
	r := newRig(t, rigOptions{stream: true, handler: func(req fakeanthropic.Request) fakeanthropic.Response {
		if len(req.ToolResults()) > 0 {
			return fakeanthropic.Response{}
		}
		return fakeanthropic.Response{Text: "Let me look first.", ToolUses: []fakeanthropic.ToolUse{
			{Name: "chat_load_history", Input: history}, {Name: "chat_send", Input: send}},
			Pace: fakeanthropic.Pace{Bytes: 6}}
	}})
	o := r.ask("hello")
	if o.err != nil || !o.res.Delivered {
		t.Fatalf("run: %+v %v", o.res, o.err)
	}
	inputs := map[int]string{}
	tools := map[int]string{}
	var drafts []string // the reply's text as a chat would show it while written
	for _, ev := range o.steps {
		if ev.Type != agent.StepToolCallDelta {
			continue
		}
		if ev.Step != 1 || (tools[ev.CallIndex] != "" && tools[ev.CallIndex] != ev.Tool) {
			t.Fatalf("delta %+v", ev)
		}
		tools[ev.CallIndex] = ev.Tool
		inputs[ev.CallIndex] += ev.Text
		if text, ok := dispatch.PartialText(inputs[ev.CallIndex]); ok && ev.Tool == dispatch.ChatSendTool &&
			(len(drafts) == 0 || drafts[len(drafts)-1] != text) {
			drafts = append(drafts, text)
		}
	}
	if tools[0] != "chat_load_history" || inputs[0] != history || tools[1] != "chat_send" || inputs[1] != send || len(tools) != 2 {
		t.Fatalf("streamed inputs %v of tools %v", inputs, tools)
	}
	if len(drafts) < 3 {
		t.Errorf("the reply grew in %d steps (%q), want ≥ 3", len(drafts), drafts)
	}
	for i := 1; i < len(drafts); i++ {
		if !strings.HasPrefix(drafts[i], drafts[i-1]) || len(drafts[i]) <= len(drafts[i-1]) {
			t.Errorf("draft %q does not grow %q", drafts[i], drafts[i-1])
		}
	}
	var calls []string
	for _, ev := range o.steps {
		if ev.Type == agent.StepToolCall {
			calls = append(calls, ev.Input)
		}
	}
	if strings.Join(calls, " ") != history+" "+send {
		t.Errorf("tool calls ran with %q, want the inputs as sent", calls)
	}
	if got := r.shown(); len(got) != 1 || got[0] != "a <b>slow</b> & careful reply, written piece by piece" {
		t.Errorf("user saw %q", got)
	}
}

// TestAnthropicToolInputNotStreamedUnwatched: a run nobody watches asks
// for the answer whole, and its calls keep langchaingo's input.
func TestAnthropicToolInputNotStreamedUnwatched(t *testing.T) {
	r := newRig(t, rigOptions{stream: false})
	o := r.ask("hi")
	if o.err != nil || !o.res.Delivered {
		t.Fatalf("run: %+v %v", o.res, o.err)
	}
	for _, ev := range o.steps {
		if ev.Type == agent.StepToolCallDelta {
			t.Fatalf("delta %+v in an unstreamed run", ev)
		}
	}
	if r.fake.Requests()[0].Stream {
		t.Error("an unstreamed run asked for a stream")
	}
}

// TestAnthropicOverloadedEventAfter200IsRetried: under load the API may
// answer 200 and then send an overloaded_error event in the stream
// ("Error events", https://docs.anthropic.com/en/api/messages-streaming).
// That is the 529 it stands for: retried with the usual backoff, and the
// turn succeeds.
func TestAnthropicOverloadedEventAfter200IsRetried(t *testing.T) {
	var calls atomic.Int32
	r := newRig(t, rigOptions{stream: true, handler: func(req fakeanthropic.Request) fakeanthropic.Response {
		if calls.Add(1) == 1 {
			return fakeanthropic.Response{StreamError: "overloaded_error"}
		}
		return fakeanthropic.EchoChatSend(req)
	}})
	o := r.ask("hi")
	if o.err != nil || !o.res.Delivered || !o.res.Success {
		t.Fatalf("run: %+v %v", o.res, o.err)
	}
	if got := r.shown(); len(got) != 1 || got[0] != "echo: hi" || r.fake.RequestCount() != 2 {
		t.Errorf("user saw %q after %d calls, want the echo after 2", got, r.fake.RequestCount())
	}
}

// TestAnthropicInvalidRequestEventIsNotRetried: an error event of a kind
// that is no passing trouble fails the run at once.
func TestAnthropicInvalidRequestEventIsNotRetried(t *testing.T) {
	r := newRig(t, rigOptions{stream: true, handler: func(fakeanthropic.Request) fakeanthropic.Response {
		return fakeanthropic.Response{StreamError: "invalid_request_error", StreamErrorMessage: "bad"}
	}})
	o := r.ask("hi")
	if o.err == nil || o.res.Success || r.fake.RequestCount() != 1 {
		t.Fatalf("run: %+v %v after %d calls, want one failed call", o.res, o.err, r.fake.RequestCount())
	}
}
