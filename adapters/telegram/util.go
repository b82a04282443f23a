package telegram

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"math/rand/v2"
	"time"
)

// sleepCtx waits d or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// backoff is for reconnecting: 1 s doubling to 1 min, with jitter.
func backoff(attempt int) time.Duration {
	return jitter(time.Second << min(attempt, 6))
}

// jitter spreads d by ±25 % so retries from many chats do not align.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return d - d/4 + time.Duration(rand.Int64N(int64(d)/2+1))
}

func randomSecret() string {
	b := make([]byte, 24)
	if _, err := crand.Read(b); err != nil {
		panic("telegram: no randomness for the webhook secret: " + err.Error())
	}
	return hex.EncodeToString(b)
}
