package main_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/faketelegram"
)

// TestE2EGroupBudgetThreeTopics: three questions in three topics of one
// forum, each answer streamed over about 15 s, against a fake that
// enforces Telegram's group budget (20 sends and edits a minute, all
// topics together) with 429: every answer ends complete, exactly once, in
// its topic, and the group's budget is never overdrawn. The test takes
// about 18 s (the answers' 15 s plus the finishing edits' turns), so the
// fake's window stays a real minute.
func TestE2EGroupBudgetThreeTopics(t *testing.T) {
	const token, group = "4242:e2e-group-budget", int64(-100910)
	tg, err := faketelegram.Start(faketelegram.Options{Token: token,
		GroupBudget: faketelegram.Budget{Calls: 20, Window: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tg.Close)
	fake := startFake(t, slowWriter)
	dir := initProject(t)
	setConfig(t, dir, "queue", `{"concurrency": 4}`)
	p := startShip(t, dir, modelEnv(fake, telegramEnv(tg, token)...))
	ctx, cancel := context.WithTimeout(context.Background(), 6*hangGuard)
	defer cancel()
	if err := tg.WaitPolling(ctx); err != nil {
		t.Fatal(err)
	}
	full := shownText(longText(1200))
	topics := []int64{11, 12, 13}
	for i, topic := range topics {
		tg.Push(tg.TopicText(group, topic, 70+int64(i), "user", tg.Mention()+" write 1200 slowly"))
	}
	for _, topic := range topics {
		shown := waitShown(ctx, t, tg, group, topic, endsWith(full))
		if len(shown) != 1 {
			t.Errorf("topic %d shows %d messages, want the one answer", topic, len(shown))
		}
	}
	for _, s := range tg.Shown() {
		if s.ChatID == group && s.Text == full && !containsInt(topics, s.ThreadID) {
			t.Errorf("an answer went to thread %d, outside the topics asked in", s.ThreadID)
		}
	}

	calls := tg.GroupCalls()
	var refused int
	for _, c := range calls {
		if c.RetryAfter > 0 {
			refused++
			t.Errorf("%s to the group drew a 429 (retry_after %d s)", c.Method, c.RetryAfter)
		}
	}
	if len(calls) == 0 {
		t.Fatal("no call to the group recorded")
	}
	span := calls[len(calls)-1].At.Sub(calls[0].At)
	perMinute := float64(len(calls)) / max(span.Minutes(), 1.0/60)
	t.Logf("group %d: %d calls (%d sends, %d edits, %d refused) over %s (%.1f a minute at that rate); at most %d in any 60 s window",
		group, len(calls), count(calls, "sendMessage"), count(calls, "editMessageText"), refused,
		span.Round(time.Millisecond), perMinute, busiestMinute(calls))
	if n := busiestMinute(calls); n > 20 {
		t.Errorf("%d calls in one minute, want at most 20", n)
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
}

func containsInt(xs []int64, x int64) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func count(calls []faketelegram.GroupCall, method string) int {
	n := 0
	for _, c := range calls {
		if c.Method == method {
			n++
		}
	}
	return n
}

// busiestMinute is the most calls that fall in any 60 s window.
func busiestMinute(calls []faketelegram.GroupCall) int {
	most := 0
	for i := range calls {
		n := 0
		for _, c := range calls[i:] {
			if c.At.Sub(calls[i].At) < time.Minute {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}
