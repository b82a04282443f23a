package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/usage"
)

// API callers share one budget per identity: after 220 tokens today the
// next /api/execute is refused with 429 BUDGET_EXCEEDED before the model is
// called, and /api/status shows the day's totals.
func TestExecuteOverTheTokenBudgetIs429AndStatusShowsUsage(t *testing.T) {
	tally, err := usage.Open("", func() time.Time { return time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC) })
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, setup{usage: tally, budget: usage.Budget{PerChatPerDay: 220}, opts: withConsole,
		handler: func(fakeopenai.Request) fakeopenai.Response {
			return fakeopenai.Response{Content: "noted", PromptTokens: 100, CompletionTokens: 10}
		}})
	e.execute(map[string]any{"instructions": "one", "chatId": "a"}).result(t)
	e.execute(map[string]any{"instructions": "two", "chatId": "a"}).result(t)
	calls := len(e.fake.Requests())
	r := e.execute(map[string]any{"instructions": "three", "chatId": "a"})
	if r.status != 429 || r.errorCode(t) != "BUDGET_EXCEEDED" || r.header.Get("Retry-After") == "" {
		t.Errorf("over budget: %d %s (Retry-After %q), want 429 BUDGET_EXCEEDED", r.status, r.body, r.header.Get("Retry-After"))
	}
	if !strings.Contains(string(r.body), "220 of this chat's 220 tokens a day") || len(e.fake.Requests()) != calls {
		t.Errorf("refusal %s after %d model calls (want %d)", r.body, len(e.fake.Requests()), calls)
	}
	// Another chat has its own budget.
	e.execute(map[string]any{"instructions": "four", "chatId": "b"}).result(t)

	st := e.get("/api/status").json(t)
	u, _ := st["usage"].(map[string]any)
	total, _ := u["total"].(map[string]any)
	if u["day"] != "2026-11-26" || total["input"] != 300.0 || total["output"] != 30.0 || total["turns"] != 3.0 {
		t.Errorf("status usage = %v", u)
	}
	chats, _ := u["chats"].([]any)
	if len(chats) != 2 || chats[0].(map[string]any)["key"] != "api:chat:a" {
		t.Errorf("top chats = %v", chats)
	}

	// The console's Usage page shows the same day.
	resp, page := get(t, consoleClient(t, e), e, "/usage")
	if resp.StatusCode != 200 || !strings.Contains(page, "Tokens on 2026-11-26") ||
		!strings.Contains(page, `href="/chats/api:chat:a">api:chat:a</a></td><td class="num">2</td><td class="num">200</td>`) {
		t.Errorf("usage page %d:\n%s", resp.StatusCode, page)
	}
	if resp, _ := get(t, consoleClient(t, e), e, "/usage?day=yesterday"); resp.StatusCode != 400 {
		t.Errorf("a day that is no date: %d, want 400", resp.StatusCode)
	}
}

// An API caller cannot escape the per-person budget by naming another
// userId (or another chat) on each request: the person a budget counts is
// the token's identity, and the body's userId is only a label.
func TestAnotherUserIDDoesNotEscapeThePersonalBudget(t *testing.T) {
	tally, err := usage.Open("", func() time.Time { return time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC) })
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, setup{usage: tally, budget: usage.Budget{PerUserPerDay: 220},
		handler: func(fakeopenai.Request) fakeopenai.Response {
			return fakeopenai.Response{Content: "noted", PromptTokens: 100, CompletionTokens: 10}
		}})
	e.execute(map[string]any{"instructions": "one", "chatId": "a", "userId": "alice"}).result(t)
	e.execute(map[string]any{"instructions": "two", "chatId": "b", "userId": "bob"}).result(t)
	r := e.execute(map[string]any{"instructions": "three", "chatId": "c", "userId": "carol"})
	if r.status != 429 || r.errorCode(t) != "BUDGET_EXCEEDED" {
		t.Fatalf("a third userId after the caller's 220 tokens: %d %s, want 429 BUDGET_EXCEEDED", r.status, r.body)
	}
}
