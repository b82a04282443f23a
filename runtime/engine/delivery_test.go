package engine_test

import (
	"errors"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/events"
	"github.com/shipmyagent/ship/runtime/ingress"
)

// askWatched is ask that also returns the run's events, the last one the
// event that ended it.
func (h *harness) askWatched(chatID, msgID, text string) (ingress.Outcome, []events.Event) {
	h.t.Helper()
	sub, _ := h.engine.Subscribe(func(e events.Event) bool { return e.ChatKey == chatKeyOf(chatID) }, 0, 256)
	defer sub.Close()
	o := h.ask(chatID, msgID, text)
	var evs []events.Event
	for e := range sub.C {
		evs = append(evs, e)
		if e.Final() {
			break
		}
	}
	return o, evs
}

// failFor sets the error the test platform answers every send with; nil
// lets sends through again.
func (o *outbox) failFor(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.fail = err
}

func TestAReplyNobodyGotEndsTheRunAsFailed(t *testing.T) {
	for _, c := range []struct {
		name    string
		handler fakeopenai.Handler
	}{
		// The model's chat_send is refused.
		{"chat_send", nil},
		// The model answers with text; the final-output fallback is refused.
		{"fallback", func(fakeopenai.Request) fakeopenai.Response { return fakeopenai.Response{Content: "the answer"} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, harnessOptions{handler: c.handler})
			h.out.failFor(errors.New("platform said 403: Forbidden: bot was blocked by the user"))
			o, evs := h.askWatched("7", "m1", "question")

			if o.Result.Success {
				t.Error("the outcome says success for a reply nobody got")
			}
			fin := evs[len(evs)-1]
			if fin.Type != events.TypeError || fin.ErrorCode != "DELIVERY_FAILED" ||
				fin.ErrorMessage != "reply not delivered: platform said 403: Forbidden: bot was blocked by the user" {
				t.Errorf("the run ended with %+v, want DELIVERY_FAILED with the platform's reason", fin)
			}
			var marked []chat.ChatLogEntryV1
			for _, e := range h.entries(chatKeyOf("7")) {
				if e.Meta["delivery"] == "failed" {
					marked = append(marked, e)
				}
			}
			if len(marked) != 1 || marked[0].Meta["replyTo"] != "m1" ||
				marked[0].Meta["reason"] != "platform said 403: Forbidden: bot was blocked by the user" {
				t.Errorf("entries marked undelivered: %+v, want one for m1 with the reason", marked)
			}
		})
	}
}

func TestAReplyThatGotThroughAfterAFailureCompletesTheRun(t *testing.T) {
	var h *harness
	h = newHarness(t, harnessOptions{handler: func(r fakeopenai.Request) fakeopenai.Response {
		switch len(r.ToolResults()) {
		case 0:
			return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{call("chat_send", map[string]string{"text": "first try"})}}
		case 1:
			h.out.failFor(nil) // the platform is back
			return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{call("chat_send", map[string]string{"text": "second try"})}}
		}
		return fakeopenai.Response{}
	}})
	h.out.failFor(errors.New("platform said 502: Bad Gateway"))
	o, evs := h.askWatched("7", "m1", "question")
	if !o.Result.Success {
		t.Error("the outcome says failure, but the user got the reply")
	}
	if fin := evs[len(evs)-1]; fin.Type != events.TypeTaskCompleted {
		t.Errorf("the run ended with %+v, want task_completed", fin)
	}
	if got := h.out.texts(chatKeyOf("7")); len(got) != 1 || got[0] != "second try" {
		t.Errorf("delivered %q", got)
	}
	for _, e := range h.entries(chatKeyOf("7")) {
		if e.Meta["delivery"] == "failed" {
			t.Errorf("entry %q marks a reply as undelivered after the run recovered", e.Text)
		}
	}
}
