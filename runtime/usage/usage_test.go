package usage_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/shipmyagent/ship/runtime/usage"
)

// clock is a settable test clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestTotalsAreExactAndSurviveAReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), ".ship", "usage")
	c := &clock{time.Date(2026, 11, 26, 23, 59, 0, 0, time.UTC)}
	// Days past KeepDays are removed; the month before stays.
	old, kept := filepath.Join(path, "2026-10-26.json"), filepath.Join(path, "2026-10-28.json")
	for _, f := range []string{old, kept} {
		if err := os.MkdirAll(path, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(`{"v":1,"total":{"turns":1}}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tl, err := usage.Open(path, c.now)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := tl.Add(ctx, "chat:a", "telegram:1", usage.Counts{Input: 100, CachedInput: 40, Output: 10}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tl.Add(ctx, "chat:b", "telegram:2", usage.Counts{Input: 7, Output: 3}); err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(2 * time.Minute) // the next UTC day
	if err := tl.Add(ctx, "chat:a", "telegram:1", usage.Counts{Input: 1, Output: 1}); err != nil {
		t.Fatal(err)
	}

	again, err := usage.Open(path, c.now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); err == nil {
		t.Error("a day older than KeepDays was kept")
	}
	if r, err := again.Report(ctx, "2026-10-28", 5); err != nil || r.Total.Turns != 1 {
		t.Errorf("a day within KeepDays: %+v, %v", r, err)
	}
	r, err := again.Report(ctx, "2026-11-26", 1)
	if err != nil {
		t.Fatal(err)
	}
	want := usage.Counts{Input: 307, CachedInput: 120, Output: 33, Turns: 4}
	if r.Total != want {
		t.Errorf("day total after a reopen = %+v, want %+v", r.Total, want)
	}
	if len(r.Chats) != 1 || r.Chats[0].Key != "chat:a" || r.Chats[0].Total() != 330 || r.ChatCount != 2 {
		t.Errorf("top chat = %+v (of %d), want chat:a with 330 tokens of 2 chats", r.Chats, r.ChatCount)
	}
	if r.ResetsAt != "2026-11-27T00:00:00Z" {
		t.Errorf("resetsAt = %s", r.ResetsAt)
	}
	today, err := again.Report(ctx, "", 10)
	if err != nil || today.Day != "2026-11-27" || today.Total.Turns != 1 || today.People[0].Key != "telegram:1" {
		t.Errorf("today = %+v, %v", today, err)
	}
	fromFile, err := usage.ReadReport(path, "2026-11-26", c.t, 10)
	if err != nil || fromFile.Total != want || len(fromFile.People) != 2 {
		t.Errorf("ReadReport = %+v, %v", fromFile, err)
	}
	if _, err := usage.ReadReport(path, "yesterday", c.t, 10); err == nil {
		t.Error("a day that is not YYYY-MM-DD was read")
	}
}

func TestBudgetRefusesUntilTheDayChanges(t *testing.T) {
	ctx := context.Background()
	c := &clock{time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	tl, err := usage.Open("", c.now)
	if err != nil {
		t.Fatal(err)
	}
	b := usage.Budget{PerUserPerDay: 100, PerChatPerDay: 150, ExemptRoles: []string{"admin"}}
	if err := tl.Check(ctx, b, "chat:a", "u1", nil); err != nil {
		t.Fatalf("a fresh day refused: %v", err)
	}
	_ = tl.Add(ctx, "chat:a", "u1", usage.Counts{Input: 90, Output: 10})
	err = tl.Check(ctx, b, "chat:a", "u1", nil)
	var ex *usage.ExceededError
	if !errors.As(err, &ex) || ex.Chat || ex.Used != 100 || ex.RefusalCode() != "BUDGET_EXCEEDED" {
		t.Fatalf("person over budget: %v", err)
	}
	if got := ex.Reply(); got != "You have used today's token budget (100 of your 100 tokens a day); it resets at 00:00 UTC." {
		t.Errorf("reply = %q", got)
	}
	if err := tl.Check(ctx, b, "chat:a", "u1", []string{"admin"}); err != nil {
		t.Errorf("an exempt role was refused: %v", err)
	}
	if err := tl.Check(ctx, b, "chat:a", "u2", nil); err != nil {
		t.Errorf("another person under both budgets was refused: %v", err)
	}
	_ = tl.Add(ctx, "chat:a", "u2", usage.Counts{Input: 50})
	if err := tl.Check(ctx, b, "chat:a", "u2", nil); !errors.As(err, &ex) || !ex.Chat {
		t.Errorf("chat over budget: %v", err)
	}
	c.t = time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	if err := tl.Check(ctx, b, "chat:a", "u1", nil); err != nil {
		t.Errorf("still refused after 00:00 UTC: %v", err)
	}
}

// BenchmarkAdd is what counting one turn costs on a busy day (1,000
// chats and 1,000 people so far, a month of such days on disk): today's
// file is rewritten and fsynced per turn, the other days are not touched.
func BenchmarkAdd(b *testing.B) {
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	dir := b.TempDir()
	for d := 0; d < 31; d++ {
		day := &usage.Day{V: 1, Chats: map[string]usage.Counts{}, People: map[string]usage.Counts{}}
		for i := 0; i < 1000; i++ {
			day.Chats["telegram:chat:"+strconv.Itoa(i)] = usage.Counts{Input: 123456, CachedInput: 100000, Output: 5432, Turns: 12}
			day.People["telegram:"+strconv.Itoa(i)] = usage.Counts{Input: 123456, CachedInput: 100000, Output: 5432, Turns: 12}
		}
		raw, err := json.Marshal(day)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, usage.DayOf(start.AddDate(0, 0, -d))+".json"), raw, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	tl, err := usage.Open(dir, func() time.Time { return start })
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := tl.Add(context.Background(), "telegram:chat:1", "telegram:1", usage.Counts{Input: 1000, Output: 50}); err != nil {
			b.Fatal(err)
		}
	}
}
