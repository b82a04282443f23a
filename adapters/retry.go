package adapters

import (
	"context"
	"math/rand/v2"
	"time"
)

// SleepCtx waits d or until ctx ends; it reports whether d passed. Every
// adapter's retry and reconnect loop waits with it, so shutdown never waits
// out a backoff.
func SleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Backoff is the wait before reconnect attempt n (from 0): 1 s doubling to
// about a minute, with jitter.
func Backoff(attempt int) time.Duration {
	return Jitter(time.Second << min(max(attempt, 0), 6))
}

// Jitter spreads d by ±25 % so retries from many chats (or many ships
// after one platform outage) do not arrive in lockstep.
func Jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return d - d/4 + time.Duration(rand.Int64N(int64(d)/2+1))
}
