package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/events"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/queue"
	"github.com/shipmyagent/ship/runtime/turn"
)

// Every source meets the queue's capacity at the same door: a platform's
// message, an API request, a console message, a scheduled task and the
// turn after an approval are all refused when the queue is full, each
// with an error event, and differ only in what their submission says.
func TestEverySourceRespectsTheQueueCapacity(t *testing.T) {
	release, started, handler := heldModel()
	h := newHarness(t, harnessOptions{capacity: 1, handler: handler})
	t.Cleanup(func() { close(release) })
	sub, _ := h.engine.Subscribe(func(e events.Event) bool { return e.Type == events.TypeError }, 0, 16)
	defer sub.Close()
	h.send("1", "a", "first")
	<-started // running
	h.send("1", "b", "second")
	// The queue is full: one waits behind the running one.

	route := turn.Route{Channel: testChannel, ChatID: "9", ChatKey: chatKeyOf("9"), ChatType: "private", MessageID: "last"}
	sources := map[string]ingress.Submission{
		"platform": {Channel: testChannel, ChatKey: chatKeyOf("9"), Once: true, KeepRefused: true,
			Message: ingress.IncomingChatMessage{ChatID: "9", MessageID: "p1", UserID: "u9", Text: "from a platform"}},
		"api": {Channel: chat.ChannelAPI, ChatKey: "api:chat:x", Once: true, DeferSync: true,
			Message: ingress.IncomingChatMessage{ChatID: "x", MessageID: "a1", UserID: "alice", Text: "from the api", ChatType: "api"},
			Turn:    turn.Turn{Identity: "api:anonymous"}},
		"console": {Channel: chat.ChannelAPI, ChatKey: "api:chat:console", Once: true,
			Message: ingress.IncomingChatMessage{ChatID: "console", MessageID: "c1", UserID: "console", Text: "from the console", ChatType: "api"}},
		"scheduler": {Channel: chat.ChannelScheduler, ChatKey: chatKeyOf("9"), Unlimited: true,
			Message: ingress.IncomingChatMessage{ChatID: "9", MessageID: "t1", UserID: "daily", Text: "[scheduled task daily]"},
			Turn:    turn.Turn{Route: route, Identity: "scheduler:daily"}},
		"approval": {Channel: testChannel, ChatKey: chatKeyOf("9"), Unlimited: true,
			Message: ingress.IncomingChatMessage{ChatID: "9", MessageID: "last", UserID: "u9", Text: "[approved]"},
			Turn:    turn.Turn{Notice: "Approved by boss"}},
	}
	for name, s := range sources {
		_, err := h.engine.Submit(context.Background(), s)
		if !errors.Is(err, queue.ErrQueueFull) || ingress.RefusalCode(err) != "QUEUE_FULL" {
			t.Errorf("%s: %v, want the queue-full refusal", name, err)
			continue
		}
		select {
		case e := <-sub.C:
			if e.ErrorCode != "QUEUE_FULL" || e.ChatKey != s.ChatKey {
				t.Errorf("%s: refusal event %+v", name, e)
			}
		case <-time.After(10 * time.Second): // hang guard
			t.Fatalf("%s: no refusal event", name)
		}
	}
}

// heldModel is a model that holds every call until release is closed,
// saying on started when a call came in: a run stays running while a test
// fills the queue behind it.
func heldModel() (release chan struct{}, started chan struct{}, handler fakeopenai.Handler) {
	release, started = make(chan struct{}), make(chan struct{}, 10)
	return release, started, func(r fakeopenai.Request) fakeopenai.Response {
		started <- struct{}{}
		<-release
		return fakeopenai.EchoChatSend(r)
	}
}
