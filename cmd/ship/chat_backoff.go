package main

import (
	"context"
	"time"
)

// Reconnect backoff: 1, 2, 4 … s, capped at 30 s, each ±20 % so that many
// clients of a restarted server do not come back in lockstep.
const (
	backoffFirst = time.Second
	backoffMax   = 30 * time.Second
)

// plainRetryBudget is how long plain mode keeps trying to reach the server
// before it gives up: a restart fits, a server that is gone does not hang
// a script forever.
const plainRetryBudget = 60 * time.Second

// backoffDelay is the wait before retry attempt (from 1); jitter returns a
// number in [0, 1).
func backoffDelay(attempt int, jitter func() float64) time.Duration {
	d := backoffFirst
	for i := 1; i < attempt && d < backoffMax; i++ {
		d *= 2
	}
	d = min(d, backoffMax)
	return time.Duration(float64(d) * (0.8 + 0.4*jitter()))
}

// retryBudget hands out backoff delays until a total time is used up.
type retryBudget struct {
	start   time.Time
	total   time.Duration
	attempt int
	jitter  func() float64
	now     func() time.Time
}

// next returns the next delay, cut to what is left of the budget; ok is
// false when nothing is left.
func (r *retryBudget) next() (d time.Duration, ok bool) {
	left := r.total - r.now().Sub(r.start)
	if left <= 0 {
		return 0, false
	}
	r.attempt++
	return min(backoffDelay(r.attempt, r.jitter), left), true
}

// sleepCtx waits for d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
