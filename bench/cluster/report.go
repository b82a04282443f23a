package main

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/shipmyagent/ship/internal/shipproc"
)

// result is what one setup measured.
type result struct {
	setup
	turns      int
	wall       time.Duration   // first send to last task_completed
	latencies  []time.Duration // send to task_completed, sorted
	runs       []time.Duration // task_completed durationMs, sorted
	byReplica  map[string]int  // turns per replica (the events' replica field)
	modelCalls int
	err        error // the setup failed: nothing was measured
}

// fill computes the result from the completions of chats with prefix:
// a chat's i-th completion answers its i-th message (a chat's turns run
// one at a time, in order).
func (r *result) fill(c *collector, prefix string, sendAt map[string][]time.Time, t0 time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r.byReplica = map[string]int{}
	var last time.Time
	for key, cs := range c.done {
		if !strings.HasPrefix(key, prefix) {
			continue
		}
		for i, d := range cs {
			r.turns++
			r.runs = append(r.runs, d.run)
			r.byReplica[d.replica]++
			if d.at.After(last) {
				last = d.at
			}
			if i < len(sendAt[key]) {
				r.latencies = append(r.latencies, d.at.Sub(sendAt[key][i]))
			}
		}
	}
	r.wall = last.Sub(t0)
	slices.Sort(r.latencies)
	slices.Sort(r.runs)
}

func (r result) turnsPerSecond() float64 {
	if r.wall <= 0 {
		return 0
	}
	return float64(r.turns) / r.wall.Seconds()
}

// percentile returns the nearest-rank percentile p (0-100) of sorted ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	n := len(ds)
	if n == 0 {
		return 0
	}
	rank := int(p/100*float64(n)+0.999999) - 1
	return ds[min(max(rank, 0), n-1)]
}

func report(w io.Writer, o options, results []result) error {
	shipVersion, goVersion := shipproc.Versions(o.bin)
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, "## Scaling run (`go run ./bench/cluster`)\n\n")
	fmt.Fprintf(b, "- machine: %s, %d CPUs (runtime.NumCPU), %s/%s; every process (ship, NATS, the fake model, the load) on it\n",
		shipproc.CPUModel(), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(b, "- ship %s built with %s\n", shipVersion, goVersion)
	calls := "2 calls per turn: `chat_load_history`, then `chat_send` with the text (ship ends a turn at `chat_send`)"
	if o.calls == 1 {
		calls = "1 call per turn: `chat_send` with the text (ship ends a turn at `chat_send`)"
	}
	fmt.Fprintf(b, "- model: the fake OpenAI API (`internal/fakeopenai`), %s per call, %s\n", o.delay, calls)
	fmt.Fprintf(b, "- load: %d chats × %d messages through `POST /api/send`, message i of chat k to replica (k·%d+i) mod n, sent by %d clients at once (each chat's messages in order); a turn counts at its `task_completed` on the replicas' SSE streams (each run once, by taskId)\n",
		o.chats, o.messages, o.messages, o.senders)
	fmt.Fprintf(b, "- `queue.concurrency` %d in every process; cluster setups: embedded NATS in each replica, routed, JetStream copies R = min(3, replicas), 16 partitions; %d warm-up turns per process first\n",
		o.concurrency, o.warmup)
	fmt.Fprintf(b, "- ceiling: what the model allows, processes × concurrency / (calls × delay)\n\n")

	fmt.Fprintf(b, "| setup | replicas | turns | seconds | turns/s | ceiling | send→done p50 | p95 | run p50 | run p95 | model calls/turn | turns per replica |\n")
	fmt.Fprintf(b, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range results {
		if r.err != nil {
			fmt.Fprintf(b, "| %s | %d | failed: %s | | | | | | | | | |\n", r.name(), r.replicas, firstLine(r.err))
			continue
		}
		ceiling := float64(max(1, r.replicas)*o.concurrency) / (float64(o.calls) * o.delay.Seconds())
		perCall := 0.0
		if r.turns > 0 {
			perCall = float64(r.modelCalls) / float64(r.turns)
		}
		fmt.Fprintf(b, "| %s | %d | %d | %.1f | %.1f | %.0f | %s | %s | %s | %s | %.2f | %s |\n",
			r.name(), r.replicas, r.turns, r.wall.Seconds(), r.turnsPerSecond(), ceiling,
			secs(percentile(r.latencies, 50)), secs(percentile(r.latencies, 95)),
			ms(percentile(r.runs, 50)), ms(percentile(r.runs, 95)), perCall, spread(r.byReplica))
	}
	return b.Flush()
}

// firstLine is the first line of err, cut to its last 200 characters
// (where the cause is) for a table cell.
func firstLine(err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	if len(line) > 200 {
		line = line[len(line)-200:]
	}
	return strings.ReplaceAll(line, "|", "/")
}

// spread renders turns per replica, "—" outside a cluster.
func spread(by map[string]int) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(by)) {
		if name == "" {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %d", name, by[name]))
	}
	if len(parts) == 0 {
		return "—"
	}
	return strings.Join(parts, ", ")
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }
