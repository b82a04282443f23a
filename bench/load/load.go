package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shipmyagent/ship/internal/shipproc"
)

// levelResult is one latency run at a fixed concurrency.
type levelResult struct {
	concurrency int
	turns       int // answered with 200 and a non-empty replies array
	failures    int
	firstErr    error
	wall        time.Duration
	latencies   []time.Duration // of the good turns, sorted
}

// turnsPerSecond is the throughput of good turns over the wall time.
func (r levelResult) turnsPerSecond() float64 {
	if r.wall <= 0 {
		return 0
	}
	return float64(r.turns) / r.wall.Seconds()
}

// percentile returns the nearest-rank percentile p (0-100) of the sorted
// latencies, or 0 when there are none.
func (r levelResult) percentile(p float64) time.Duration {
	n := len(r.latencies)
	if n == 0 {
		return 0
	}
	rank := int(p/100*float64(n)+0.999999) - 1
	return r.latencies[min(max(rank, 0), n-1)]
}

// runLevel sends n turns to POST /api/execute from concurrency workers, each
// in its own chat (chatPrefix-w<k>), and measures every turn's latency.
func runLevel(ctx context.Context, client *http.Client, url string, concurrency, n int, chatPrefix string) levelResult {
	res := levelResult{concurrency: concurrency}
	var next atomic.Int64
	perWorker := make([][]time.Duration, concurrency)
	errs := make([]error, concurrency)
	fails := make([]int, concurrency)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range concurrency {
		wg.Go(func() {
			chatID := fmt.Sprintf("%s-w%d", chatPrefix, w)
			for i := int(next.Add(1)); i <= n && ctx.Err() == nil; i = int(next.Add(1)) {
				t0 := time.Now()
				err := turn(ctx, client, url, chatID, fmt.Sprintf("turn %d of worker %d", i, w))
				if err != nil {
					fails[w]++
					if errs[w] == nil {
						errs[w] = err
					}
					continue
				}
				perWorker[w] = append(perWorker[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	res.wall = time.Since(start)
	for w := range concurrency {
		res.latencies = append(res.latencies, perWorker[w]...)
		res.failures += fails[w]
		if res.firstErr == nil {
			res.firstErr = errs[w]
		}
	}
	res.turns = len(res.latencies)
	slices.Sort(res.latencies)
	return res
}

// turn runs one turn and checks it was answered: 200 and at least one reply.
func turn(ctx context.Context, client *http.Client, url, chatID, text string) error {
	status, raw, err := shipproc.PostJSON(ctx, client, url+"/api/execute", map[string]string{"instructions": text, "chatId": chatID})
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("status %d: %.200s", status, raw)
	}
	var out struct {
		Replies []string `json:"replies"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return fmt.Errorf("decoding the answer: %w", err)
	}
	if len(out.Replies) == 0 {
		return fmt.Errorf("no replies: %.200s", raw)
	}
	return nil
}

// warmUp runs n turns in one chat and fails on the first bad one.
func warmUp(ctx context.Context, client *http.Client, url string, n int) error {
	for i := range n {
		if err := turn(ctx, client, url, "warmup", fmt.Sprintf("warm-up turn %d", i)); err != nil {
			return fmt.Errorf("warm-up turn %d: %w", i, err)
		}
	}
	return nil
}
