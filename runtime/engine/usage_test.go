package engine_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/events"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/usage"
)

// fixedUsage answers every call with the same text and the same usage, as
// the provider reports it in the response's usage object.
func fixedUsage(r fakeopenai.Request) fakeopenai.Response {
	return fakeopenai.Response{Content: "noted", PromptTokens: 100, CompletionTokens: 10}
}

// settable is a clock a test moves.
type settable struct {
	mu sync.Mutex
	t  time.Time
}

func (c *settable) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *settable) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// accept hands a platform message to the engine as an adapter does.
func accept(t *testing.T, h *harness, chatID, user, msgID string) {
	t.Helper()
	if _, err := h.engine.Accept(context.Background(), ingress.Submission{Channel: testChannel, ChatKey: chatKeyOf(chatID),
		Message: ingress.IncomingChatMessage{ChatID: chatID, Text: "hello " + msgID, MessageID: msgID, UserID: user, ChatType: "group"}}); err != nil {
		t.Fatalf("accepting %s: %v", msgID, err)
	}
	h.waitIdle()
}

func TestUsageTotalsAreExactAndSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".ship", "usage")
	clock := &settable{t: time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)}
	tally, err := usage.Open(path, clock.now)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOptions{dir: dir, handler: fixedUsage, usage: tally})
	// Chat 1: u1 three times, u2 once; chat 2: u1 twice.
	for i, m := range []struct{ chat, user string }{{"1", "u1"}, {"1", "u1"}, {"1", "u2"}, {"1", "u1"}, {"2", "u1"}, {"2", "u1"}} {
		accept(t, h, m.chat, m.user, "m"+string(rune('a'+i)))
	}
	want := func(r engine.UsageReport) {
		t.Helper()
		if r.Day != "2026-11-26" || r.Total != (usage.Counts{Input: 600, Output: 60, Turns: 6}) {
			t.Errorf("day %s total %+v, want 600 in / 60 out over 6 turns", r.Day, r.Total)
		}
		rows := func(rs []usage.Row) map[string]int64 {
			m := map[string]int64{}
			for _, r := range rs {
				m[r.Key] = r.Total()
			}
			return m
		}
		if got := rows(r.Chats); got[chatKeyOf("1")] != 440 || got[chatKeyOf("2")] != 220 {
			t.Errorf("per chat %v, want 440 and 220", got)
		}
		if got := rows(r.People); got["telegram:u1"] != 550 || got["telegram:u2"] != 110 {
			t.Errorf("per person %v, want u1 550 and u2 110", got)
		}
	}
	r, ok := h.engine.Usage(context.Background(), "")
	if !ok {
		t.Fatal("the engine counts no usage")
	}
	want(r)
	// Each run left its tokens in its chat's log.
	var logged []string
	for _, e := range h.entries(chatKeyOf("2")) {
		if e.Role == chat.RoleSystem && e.Meta["event"] == engine.EventUsage {
			logged = append(logged, e.Text)
		}
	}
	if !slices.Equal(logged, []string{"tokens: 100 in (0 cached), 10 out", "tokens: 100 in (0 cached), 10 out"}) {
		t.Errorf("usage entries of chat 2: %q", logged)
	}

	h.close()
	again, err := usage.Open(path, clock.now)
	if err != nil {
		t.Fatal(err)
	}
	h2 := newHarness(t, harnessOptions{dir: dir, handler: fixedUsage, usage: again})
	r, _ = h2.engine.Usage(context.Background(), "")
	want(r)
}

func TestBudgetRefusesAtTheDoorUntilTheDayChanges(t *testing.T) {
	clock := &settable{t: time.Date(2026, 11, 26, 23, 0, 0, 0, time.UTC)}
	tally, err := usage.Open("", clock.now)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOptions{handler: fixedUsage, usage: tally,
		budget: usage.Budget{PerUserPerDay: 220, ExemptRoles: []string{"admin"}},
		policy: `{"roles": {"admin": {"members": ["telegram:boss"]}}}`})
	sub, _ := h.engine.Subscribe(func(e events.Event) bool { return e.Type == events.TypeError }, 0, 16)
	defer sub.Close()
	accept(t, h, "1", "u1", "a")
	accept(t, h, "1", "u1", "b") // 220 tokens: the budget is used up
	calls := len(h.fake.Requests())
	accept(t, h, "1", "u1", "c")

	if n := len(h.fake.Requests()); n != calls {
		t.Errorf("the refused turn called the model (%d calls, want %d)", n, calls)
	}
	select {
	case e := <-sub.C:
		if e.ErrorCode != "BUDGET_EXCEEDED" || e.UserMessageID != "c" {
			t.Errorf("refusal event %+v", e)
		}
	case <-time.After(10 * time.Second): // hang guard
		t.Fatal("no BUDGET_EXCEEDED event")
	}
	reply := "You have used today's token budget (220 of your 220 tokens a day); it resets at 00:00 UTC."
	waitFor(t, "the budget reply in the chat", func() bool { return slices.Contains(h.out.texts(chatKeyOf("1")), reply) })
	// The refused message is in the log, with why it was not answered.
	es := h.entries(chatKeyOf("1"))
	var refusal string
	for _, e := range es {
		if e.Role == chat.RoleSystem && e.MessageID == "c" {
			refusal = e.Text
		}
	}
	if !strings.Contains(refusal, "today's token budget is used up") {
		t.Errorf("log after the refusal: %s", roles(es))
	}

	// An admin is not held to it; another person has their own budget.
	accept(t, h, "1", "boss", "d")
	accept(t, h, "1", "boss", "e")
	accept(t, h, "1", "boss", "f")
	accept(t, h, "1", "u2", "g")
	if n := len(h.fake.Requests()); n != calls+4 {
		t.Errorf("model calls = %d, want %d (three by the exempt admin, one by u2)", n, calls+4)
	}

	// At 00:00 UTC the window resets.
	clock.set(time.Date(2026, 11, 27, 0, 0, 1, 0, time.UTC))
	accept(t, h, "1", "u1", "h")
	if n := len(h.fake.Requests()); n != calls+5 {
		t.Errorf("after the reset: %d model calls, want %d", n, calls+5)
	}
}

// waitFor waits until cond holds (what the engine does in the background).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second) // hang guard
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never saw %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Cached input is counted as the provider reports it: the fake caches a
// prompt of 1,024 tokens or more by exact prefix, as OpenAI does, and
// reports usage.prompt_tokens_details.cached_tokens.
func TestCachedInputIsCountedAsTheProviderReportsIt(t *testing.T) {
	tally, err := usage.Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOptions{usage: tally, agentMD: strings.Repeat("Be brief and kind. ", 400),
		handler: func(fakeopenai.Request) fakeopenai.Response {
			return fakeopenai.Response{Content: "noted", CompletionTokens: 10}
		}})
	for _, id := range []string{"a", "b", "c"} {
		accept(t, h, "1", "u1", id)
	}
	var input, cached int64
	for _, r := range h.fake.Requests() {
		input += int64(r.PromptTokens)
		cached += int64(r.CachedTokens)
	}
	r, _ := h.engine.Usage(context.Background(), "")
	if cached == 0 || r.Total.CachedInput != cached || r.Total.Input != input || r.Total.Output != 30 {
		t.Errorf("counted %+v; the fake reported %d input, %d of it cached, 30 output", r.Total, input, cached)
	}
}
