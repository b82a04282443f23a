package ingress_test

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/shipmyagent/ship/internal/fakeclock"
	"github.com/shipmyagent/ship/runtime/ingress"
)

func newFakeClock() *fakeclock.Clock {
	return fakeclock.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
}

// allowed counts how many of n messages from user in chatKey get through.
func allowed(l *ingress.UserLimiter, chatKey, user string, n int) int {
	got := 0
	for range n {
		if l.Allow(chatKey, user) {
			got++
		}
	}
	return got
}

func TestUserLimiterDefaultsAreBurst10Then20PerMinute(t *testing.T) {
	clock := newFakeClock()
	l := ingress.NewUserLimiter(ingress.UserLimiterOptions{Now: clock.Now})
	const chat = "telegram:chat:-100"
	if got := allowed(l, chat, "ann", 15); got != 10 {
		t.Fatalf("a burst of 15 let %d through, want the burst of 10", got)
	}
	clock.Advance(2900 * time.Millisecond)
	if l.Allow(chat, "ann") {
		t.Fatal("a message 2.9 s later got through; 20/min refills one every 3 s")
	}
	clock.Advance(100 * time.Millisecond)
	if !l.Allow(chat, "ann") {
		t.Fatal("a message 3 s later was refused")
	}
	// A minute of steady sending: 20 more.
	got := 0
	for range 60 {
		clock.Advance(time.Second)
		if l.Allow(chat, "ann") {
			got++
		}
	}
	if got != 20 {
		t.Errorf("one message a second for a minute let %d through, want 20", got)
	}
}

func TestUserLimiterKeepsUsersAndChatsApart(t *testing.T) {
	clock := newFakeClock()
	l := ingress.NewUserLimiter(ingress.UserLimiterOptions{Rate: 1, Burst: 2, Now: clock.Now})
	if got := allowed(l, "g1", "mallory", 50); got != 2 {
		t.Fatalf("mallory got %d through, want 2", got)
	}
	if got := allowed(l, "g1", "ann", 2); got != 2 {
		t.Errorf("ann was starved by mallory in the same group: %d of 2", got)
	}
	if got := allowed(l, "g2", "mallory", 2); got != 2 {
		t.Errorf("mallory's allowance in g1 was spent in g2: %d of 2", got)
	}
	// Keys are pairs, not concatenations that could collide.
	if got := allowed(l, "g1m", "allory", 2); got != 2 {
		t.Errorf("(g1m, allory) shares a bucket with (g1, mallory): %d of 2", got)
	}
}

func TestUserLimiterForgetsIdlePairsWithoutChangingAnswers(t *testing.T) {
	clock := newFakeClock()
	// Burst 4 at 2/s: an empty bucket is full again after 2 s.
	l := ingress.NewUserLimiter(ingress.UserLimiterOptions{Rate: 2, Burst: 4, Now: clock.Now})
	for i := range 1000 {
		l.Allow("c", strconv.Itoa(i))
	}
	if n := l.Len(); n != 1000 {
		t.Fatalf("Len = %d, want 1000", n)
	}
	clock.Advance(1999 * time.Millisecond)
	l.Allow("c", "new")
	if n := l.Len(); n != 1001 {
		t.Fatalf("pairs were dropped before their buckets refilled: Len = %d, want 1001", n)
	}
	clock.Advance(time.Millisecond)
	l.Allow("c", "newer")
	if n := l.Len(); n != 2 {
		t.Fatalf("idle pairs were kept: Len = %d, want 2", n)
	}
	// A forgotten pair starts full, as it would have been anyway.
	if got := allowed(l, "c", "7", 10); got != 4 {
		t.Errorf("a forgotten pair let %d through, want the burst of 4", got)
	}
}

func TestUserLimiterRefusedMessagesDoNotCount(t *testing.T) {
	clock := newFakeClock()
	l := ingress.NewUserLimiter(ingress.UserLimiterOptions{Rate: 1, Burst: 1, Now: clock.Now})
	l.Allow("c", "u")
	for range 99 { // until 0.99 s
		clock.Advance(10 * time.Millisecond)
		if l.Allow("c", "u") { // refused, and must not push the next allowance back
			t.Fatal("allowed before the bucket refilled")
		}
	}
	clock.Advance(10 * time.Millisecond)
	if !l.Allow("c", "u") {
		t.Error("a user who kept trying was refused after the 1 s refill")
	}
}

func TestUserLimiterCapsTheNumberOfPairs(t *testing.T) {
	clock := newFakeClock()
	l := ingress.NewUserLimiter(ingress.UserLimiterOptions{Burst: 1, MaxKeys: 3, Now: clock.Now})
	for _, u := range []string{"a", "b", "c"} {
		l.Allow("g", u)
	}
	l.Allow("g", "a") // a is now the most recently seen; b the least
	l.Allow("g", "d") // evicts b
	if n := l.Len(); n != 3 {
		t.Fatalf("Len = %d, want 3", n)
	}
	if l.Allow("g", "a") {
		t.Error("a's spent bucket was forgotten although a was seen recently")
	}
	if !l.Allow("g", "b") {
		t.Error("b, the least recently seen, was not the one forgotten")
	}
}

func TestUserLimiterDefaultCapIs100kPairs(t *testing.T) {
	clock := newFakeClock()
	l := ingress.NewUserLimiter(ingress.UserLimiterOptions{Now: clock.Now})
	for i := range ingress.DefaultUserMaxKeys + 5_000 {
		l.Allow("telegram:chat:"+strconv.Itoa(i), "u")
	}
	if n := l.Len(); n != ingress.DefaultUserMaxKeys {
		t.Errorf("Len = %d, want %d", n, ingress.DefaultUserMaxKeys)
	}
}

func TestUserLimiterInfiniteRateAllowsAllAndKeepsNothing(t *testing.T) {
	l := ingress.NewUserLimiter(ingress.UserLimiterOptions{Rate: rate.Inf})
	if got := allowed(l, "c", "u", 1000); got != 1000 {
		t.Errorf("%d of 1000 allowed", got)
	}
	if n := l.Len(); n != 0 {
		t.Errorf("Len = %d, want 0", n)
	}
}

func TestUserLimiterIsSafeForConcurrentUse(t *testing.T) {
	clock := newFakeClock()
	l := ingress.NewUserLimiter(ingress.UserLimiterOptions{Rate: 1, Burst: 5, Now: clock.Now})
	small := ingress.NewUserLimiter(ingress.UserLimiterOptions{Rate: 1, Burst: 5, MaxKeys: 50, Now: clock.Now})
	var ok atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				if l.Allow("g", "shared") {
					ok.Add(1)
				}
				l.Allow("g", strconv.Itoa(g*1000+i))
				small.Allow("g", strconv.Itoa(g*1000+i)) // churns its LRU
				if i%100 == 0 {
					_, _ = l.Len(), small.Len()
				}
			}
		}()
	}
	wg.Wait()
	if got := ok.Load(); got != 5 {
		t.Errorf("4,000 concurrent messages from one user at one instant let %d through, want the burst of 5", got)
	}
	if n := l.Len(); n != 8*500+1 {
		t.Errorf("Len = %d, want %d", n, 8*500+1)
	}
	if n := small.Len(); n != 50 {
		t.Errorf("Len = %d with MaxKeys 50", n)
	}
}
