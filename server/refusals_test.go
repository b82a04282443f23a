package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeclock"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/events"
	"github.com/shipmyagent/ship/runtime/ingress"
)

// frozenLimit is the default per-sender limit (20 a minute, a burst of
// 10) on a clock that does not move: a burst is a burst however slow the
// machine.
func frozenLimit() ingress.UserLimiterOptions {
	return ingress.UserLimiterOptions{Now: fakeclock.New(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)).Now}
}

// A burst over the per-sender limit is refused visibly on both API doors:
// 429 RATE_LIMITED with Retry-After, an error event each, and nothing of
// the refused messages in the chat log (their ids stay free).
func TestABurstOverTheLimitIsRefusedWith429OnSendAndExecute(t *testing.T) {
	for _, door := range []string{"/api/send", "/api/execute"} {
		t.Run(strings.TrimPrefix(door, "/api/"), func(t *testing.T) {
			e := newEnv(t, setup{handler: fakeopenai.EchoChatSend, userLimit: frozenLimit()})
			sub, _ := e.engine.Subscribe(func(ev events.Event) bool { return ev.Type == events.TypeError }, 0, 64)
			defer sub.Close()
			var ok, limited []string
			for i := range 15 {
				id := fmt.Sprintf("b%d", i)
				body := fmt.Sprintf(`{"userMessageId":%q,"message":"burst %d","userId":"alice","chatId":"burst"}`, id, i)
				if door == "/api/execute" {
					body = fmt.Sprintf(`{"messageId":%q,"instructions":"burst %d","userId":"alice","chatId":"burst"}`, id, i)
				}
				r := e.request(http.MethodPost, door, []byte(body), map[string]string{"Content-Type": "application/json"})
				switch r.status {
				case http.StatusOK:
					ok = append(ok, id)
				case http.StatusTooManyRequests:
					if r.errorCode(t) != "RATE_LIMITED" {
						t.Errorf("429 with code %q", r.errorCode(t))
					}
					if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 {
						t.Errorf("Retry-After = %q", r.header.Get("Retry-After"))
					}
					limited = append(limited, id)
				default:
					t.Fatalf("%s %s: %d %s", door, id, r.status, r.body)
				}
			}
			if len(ok) != 10 || len(limited) != 5 {
				t.Fatalf("%d taken, %d refused; want the burst of 10 and 5 refusals", len(ok), len(limited))
			}
			for range limited {
				select {
				case ev := <-sub.C:
					if ev.ErrorCode != "RATE_LIMITED" || ev.ChatKey != "api:chat:burst" || !strings.HasPrefix(ev.UserMessageID, "b") {
						t.Errorf("refusal event = %+v", ev)
					}
				case <-time.After(10 * time.Second): // hang guard
					t.Fatal("a refusal published no error event")
				}
			}
			// Every message taken is answered; no refused one is in the log.
			waitFor(t, "the taken messages' replies", func() bool {
				n := 0
				for _, en := range e.entries("api:chat:burst") {
					if en.Role == chat.RoleAssistant {
						n++
					}
				}
				return n == len(ok)
			})
			for _, en := range e.entries("api:chat:burst") {
				for _, id := range limited {
					if en.MessageID == id {
						t.Errorf("refused message %s is in the chat log: %+v", id, en)
					}
				}
			}
			// Another sender in the same chat is not held back.
			other := `{"userMessageId":"c1","message":"hi","userId":"bob","chatId":"burst"}`
			if door == "/api/execute" {
				other = `{"messageId":"c1","instructions":"hi","userId":"bob","chatId":"burst"}`
			}
			if r := e.request(http.MethodPost, door, []byte(other), map[string]string{"Content-Type": "application/json"}); r.status != http.StatusOK {
				t.Errorf("another sender: %d %s", r.status, r.body)
			}
		})
	}
}

// A full queue refuses /api/send as it does /api/execute: 503 QUEUE_FULL,
// an error event, nothing logged, and the id is still free for the retry.
func TestAFullQueueRefusesSendWith503AndKeepsTheIDFree(t *testing.T) {
	g := newGate()
	e := newEnv(t, setup{handler: g.handler, capacity: 1})
	t.Cleanup(g.open)
	sub, _ := e.engine.Subscribe(func(ev events.Event) bool { return ev.Type == events.TypeError }, 0, 16)
	defer sub.Close()
	json := map[string]string{"Content-Type": "application/json"}

	running := e.asyncExecute(context.Background(), `{"instructions":"one","chatId":"a"}`)
	g.waitEntered(t)
	if r := e.request(http.MethodPost, "/api/send", []byte(`{"userMessageId":"w1","message":"two","chatId":"b"}`), json); r.status != http.StatusOK {
		t.Fatalf("the waiting message: %d %s", r.status, r.body)
	}
	r := e.request(http.MethodPost, "/api/send", []byte(`{"userMessageId":"x1","message":"three","chatId":"c"}`), json)
	if r.status != http.StatusServiceUnavailable || r.errorCode(t) != "QUEUE_FULL" || r.header.Get("Retry-After") == "" {
		t.Fatalf("a send into the full queue: %d %s, want 503 QUEUE_FULL", r.status, r.body)
	}
	select {
	case ev := <-sub.C:
		if ev.ErrorCode != "QUEUE_FULL" || ev.ChatKey != "api:chat:c" || ev.UserMessageID != "x1" {
			t.Errorf("refusal event = %+v", ev)
		}
	case <-time.After(10 * time.Second): // hang guard
		t.Fatal("the refusal published no error event")
	}
	if es := e.entries("api:chat:c"); len(es) != 0 {
		t.Errorf("the refused message left %d entries in its chat log", len(es))
	}
	g.open()
	await(t, running)
	waitFor(t, "the queue to empty", func() bool { st := e.engine.QueueStats(); return st.Waiting+st.Running == 0 })
	if r := e.request(http.MethodPost, "/api/send", []byte(`{"userMessageId":"x1","message":"three","chatId":"c"}`), json); r.status != http.StatusOK || !strings.Contains(string(r.body), `"ok"`) {
		t.Errorf("the retry of the refused id: %d %s, want ok", r.status, r.body)
	}
}
