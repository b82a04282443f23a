package main

import (
	"bufio"
	"fmt"
	"hash/fnv"
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
	wall       time.Duration    // first send to last task_completed
	latencies  []time.Duration  // send to task_completed, sorted
	runs       []time.Duration  // task_completed durationMs, sorted
	byReplica  map[string]int   // turns per replica (the events' replica field)
	partitions int              // cluster.partitions (cluster setups)
	held       map[string][]int // partitions per replica once settled, before the load
	idleCPU    time.Duration    // CPU per second of all its processes while idle (-idle)
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
	parts := "ship's default partition count"
	if o.partitions > 0 {
		parts = fmt.Sprintf("%d partitions", o.partitions)
	}
	fmt.Fprintf(b, "- `queue.concurrency` %d in every process; cluster setups: embedded NATS in each replica, routed, JetStream copies R = min(3, replicas), %s, the load sent once the partitions settled; %d warm-up turns per process first\n",
		o.concurrency, parts, o.warmup)
	fmt.Fprintf(b, "- ceiling: what the model allows, processes × concurrency / (calls × delay); × 1: turns/s over the 1-replica setup's in this run\n")
	fmt.Fprintf(b, "- per replica: partitions held / chats of the load hashed onto them / turns run there\n\n")

	base := 0.0
	for _, r := range results {
		if r.err == nil && r.replicas == 1 {
			base = r.turnsPerSecond()
		}
	}
	fmt.Fprintf(b, "| setup | replicas | turns | seconds | turns/s | × 1 | ceiling | send→done p50 | p95 | run p50 | run p95 | model calls/turn | per replica: partitions / chats / turns |\n")
	fmt.Fprintf(b, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	var idle []string
	for _, r := range results {
		if r.err != nil {
			fmt.Fprintf(b, "| %s | %d | failed: %s | | | | | | | | | | |\n", r.name(), r.replicas, firstLine(r.err))
			continue
		}
		ratio := "—"
		if base > 0 {
			ratio = fmt.Sprintf("%.2f×", r.turnsPerSecond()/base)
		}
		ceiling := float64(max(1, r.replicas)*o.concurrency) / (float64(o.calls) * o.delay.Seconds())
		perCall := 0.0
		if r.turns > 0 {
			perCall = float64(r.modelCalls) / float64(r.turns)
		}
		if r.idleCPU > 0 {
			idle = append(idle, fmt.Sprintf("%s, %d partitions: %.1f ms of CPU a second", r.name(), r.partitions, float64(r.idleCPU)/float64(time.Millisecond)))
		}
		fmt.Fprintf(b, "| %s | %d | %d | %.1f | %.1f | %s | %.0f | %s | %s | %s | %s | %.2f | %s |\n",
			r.name(), r.replicas, r.turns, r.wall.Seconds(), r.turnsPerSecond(), ratio, ceiling,
			secs(percentile(r.latencies, 50)), secs(percentile(r.latencies, 95)),
			ms(percentile(r.runs, 50)), ms(percentile(r.runs, 95)), perCall, r.spread(o))
	}
	if len(idle) > 0 {
		fmt.Fprintf(b, "\nIdle, all processes of a setup together (%s measured before the load):\n\n", o.idle)
		for _, line := range idle {
			fmt.Fprintf(b, "- %s\n", line)
		}
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

// spread renders, per replica, the partitions it held before the load,
// the load's chats that hash onto them, and the turns it ran; "—"
// outside a cluster.
func (r result) spread(o options) string {
	chats := map[int]int{} // by partition
	if r.partitions > 0 {
		for k := range o.chats {
			chats[partitionOf(fmt.Sprintf("api:chat:c%d", k), r.partitions)]++
		}
	}
	names := map[string]bool{}
	for name := range r.byReplica {
		names[name] = true
	}
	for name := range r.held {
		names[name] = true
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(names)) {
		if name == "" {
			continue
		}
		c := 0
		for _, id := range r.held[name] {
			c += chats[id]
		}
		parts = append(parts, fmt.Sprintf("%s %d / %d / %d", name, len(r.held[name]), c, r.byReplica[name]))
	}
	if len(parts) == 0 {
		return "—"
	}
	return strings.Join(parts, ", ")
}

// partitionOf is the shared queue's hash of a chat key onto a partition
// (cluster.Queue's partitionOf): FNV-1a, modulo the partition count.
func partitionOf(chatKey string, partitions int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(chatKey))
	return int(h.Sum32() % uint32(partitions))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }
