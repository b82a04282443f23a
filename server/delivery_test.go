package server_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/shipmyagent/ship/internal/browser"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
)

// refusedReason is what the refusing destination answers every send with.
const refusedReason = "403 Forbidden: bot was blocked by the user"

// refuseReplies makes every reply in the api channel fail, as a platform
// chat that blocked the bot does; in chat "partly" the first part of each
// reply arrives and the second of three is refused. The api channel's own
// dispatcher (the request's collector) never fails, so the test puts a
// refusing one in its place: what is tested is that the answers report
// what the run found out about its delivery rather than assume it.
func refuseReplies(e *env) {
	e.engine.Register(chat.ChannelAPI, dispatch.DispatcherFunc(func(_ context.Context, req dispatch.RequestContext, _ string) error {
		if req.ChatID == "partly" {
			return &dispatch.PartError{Part: 2, Parts: 3, Err: errors.New(refusedReason)}
		}
		return errors.New(refusedReason)
	}))
}

func TestExecuteSaysSuccessFalseWhenTheReplyWasNotDelivered(t *testing.T) {
	e := newEnv(t, setup{})
	refuseReplies(e)
	res := e.execute(map[string]string{"instructions": "hello", "chatId": "blocked"}).result(t)
	if res.Success {
		t.Error("success true for a reply nobody got")
	}
	if len(res.Replies) != 0 {
		t.Errorf("replies %q, want none delivered", res.Replies)
	}

	// Streamed, the run ends with the error event instead of task_completed.
	evs := e.streamExecute("/api/execute", `{"instructions":"again","chatId":"blocked"}`)
	fin := evs[len(evs)-1]
	if fin.typ() != "error" || fin.str("errorCode") != "DELIVERY_FAILED" || fin.str("errorMessage") != "reply not delivered: "+refusedReason {
		t.Errorf("stream ended with %v, want DELIVERY_FAILED with the reason", fin.Data)
	}
	if strings.Contains(types(evs), "task_completed") {
		t.Errorf("stream %s claims the run completed", types(evs))
	}
}

func TestConsoleChatPageMarksAReplyThatWasNotDelivered(t *testing.T) {
	ctx := browser.ForTest(t)
	e := newEnv(t, setup{opts: withConsole})
	refuseReplies(e)
	// The console counts finished turns on a subscription of its own;
	// the page's stream is the one after it.
	waitFor(t, "the console's turn counter", func() bool { return e.engine.Subscribers() == 1 })
	// The chat page is open while the run happens: it must show the
	// failure when the run ends, as a user watching it would see it.
	if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/chats/api:chat:blocked")); err != nil {
		t.Fatalf("opening the chat page: %v", err)
	}
	waitFor(t, "the chat page's live updates", func() bool { return e.engine.Subscribers() == 2 })
	if res := e.execute(map[string]string{"instructions": "hello", "chatId": "blocked"}).result(t); res.Success {
		t.Error("success true for a reply nobody got")
	}
	pollIn(t, ctx, "the undelivered mark", `document.querySelector(".entry.undelivered .text") !== null`)
	if got := evalIn[string](t, ctx, `document.querySelector(".entry.undelivered .text").textContent`); got != "not delivered: "+refusedReason {
		t.Errorf("the entry says %q, want %q", got, "not delivered: "+refusedReason)
	}
	// Styled as an error: in the colour the console gives every failure.
	same := evalIn[bool](t, ctx, `(() => {
		const probe = document.createElement("span");
		probe.style.color = "var(--bad)";
		document.body.appendChild(probe);
		const bad = getComputedStyle(probe).color;
		probe.remove();
		return getComputedStyle(document.querySelector(".entry.undelivered .text")).color === bad;
	})()`)
	if !same {
		t.Error("the undelivered mark is not shown in the error colour")
	}

	// A reply of which only the first part arrived says which part failed.
	if res := e.execute(map[string]string{"instructions": "a long one", "chatId": "partly"}).result(t); res.Success {
		t.Fatal("success true for a reply the user got only part of")
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/chats/api:chat:partly")); err != nil {
		t.Fatalf("opening the chat page: %v", err)
	}
	want := "part 2 of 3 not delivered: " + refusedReason
	if got := evalIn[string](t, ctx, `(document.querySelector(".entry.undelivered .text.error") || {}).textContent || ""`); got != want {
		t.Errorf("the entry says %q, want %q", got, want)
	}
}

// evalIn evaluates a JavaScript expression in the page.
func evalIn[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// pollIn waits until a JavaScript expression is true in the page; the
// browser's own deadline is the hang guard.
func pollIn(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	if err := chromedp.Do(ctx, browser.Until(expr)); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
