// Command load is ship's whole-process load run (BENCHMARKS.md): it starts
// the real ship binary against an in-process, zero-latency fake of the
// OpenAI API and measures start-up time, memory, and the latency and
// throughput of POST /api/execute. It prints Markdown for BENCHMARKS.md.
//
//	go run ./bench/load [-bin ./ship] [-n 2000] [-timeout 5m]
//
// Everything runs on loopback; every loop has a count and the whole run has
// a deadline.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"time"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/shipproc"
)

// options are the command-line flags.
type options struct {
	bin      string
	n        int
	launches int
	warmup   int
	timeout  time.Duration
	levels   []int // concurrencies of the latency runs
}

func main() {
	o := options{levels: []int{1, 16}}
	flag.StringVar(&o.bin, "bin", "", "ship binary to run (default: build ./cmd/ship into a temp folder; run from the module)")
	flag.IntVar(&o.n, "n", 2000, "requests per concurrency level and variant")
	flag.IntVar(&o.launches, "launches", 5, "launches for the start-up measurement")
	flag.IntVar(&o.warmup, "warmup", 50, "turns before measuring each variant")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "deadline for the whole run")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), `Usage: go run ./bench/load [flags]

Runs the real ship binary against an in-process zero-latency fake model on
127.0.0.1 and prints start-up time, memory and POST /api/execute latency and
throughput (concurrency levels %v) as Markdown.

Flags:
`, o.levels)
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 || o.n < 1 || o.launches < 1 || o.warmup < 0 || o.timeout <= 0 {
		flag.Usage()
		os.Exit(2)
	}

	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "load: %v\n", err)
		os.Exit(1)
	}
}

// variant is one way of running ship under load.
type variant struct {
	name       string
	args       []string // extra `ship start` flags
	useFake    bool     // the fake model over HTTP (else --offline)
	durability string   // store.durability written to ship.json; "" keeps the default
}

// variants are the runs: the fake model with durable writes (the default)
// and without fsync, then the offline model (ship's own overhead, HTTP API
// included, without any model HTTP) with and without fsync.
func variants() []variant {
	return []variant{
		{name: "fake model over HTTP", useFake: true},
		{name: "fake model over HTTP", useFake: true, durability: "none"},
		{name: "offline model (in process)", args: []string{"--offline"}},
		{name: "offline model (in process)", args: []string{"--offline"}, durability: "none"},
	}
}

// variantResult is what one variant measured.
type variantResult struct {
	variant
	idleRSS, warmRSS, peakRSS int64
	levels                    []levelResult
	modelCalls                int // requests the fake model answered during the measured runs
}

func run(ctx context.Context, o options, w io.Writer) error {
	tmp, err := os.MkdirTemp("", "ship-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	if o.bin == "" {
		fmt.Fprintln(os.Stderr, "load: building ship ...")
		if o.bin, err = shipproc.Build(ctx, tmp); err != nil {
			return err
		}
	}
	fake, err := fakeopenai.StartWithOptions(loadModel, fakeopenai.Options{MaxRecorded: 64})
	if err != nil {
		return err
	}
	defer fake.Close()
	fakeEnv := shipproc.Env("LLM_PROVIDER=openai", "LLM_API_KEY=load-test-key", "LLM_MODEL=fake", "LLM_BASE_URL="+fake.BaseURL())

	fmt.Fprintln(os.Stderr, "load: measuring start-up ...")
	startDir := filepath.Join(tmp, "startup")
	if err := shipproc.Init(ctx, o.bin, startDir, nil); err != nil {
		return err
	}
	startups, err := measureStartup(ctx, o.bin, startDir, fakeEnv, o.launches)
	if err != nil {
		return err
	}

	// One idle connection per worker, so the runs measure ship, not dialling.
	conns := slices.Max(o.levels)
	client := &http.Client{
		Timeout:   60 * time.Second,
		Transport: &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, IdleConnTimeout: time.Minute},
	}
	defer client.CloseIdleConnections()
	var results []variantResult
	vs := variants()
	for i, v := range vs {
		fmt.Fprintf(os.Stderr, "load: variant %d of %d: %s, durability %s ...\n", i+1, len(vs), v.name, orDefault(v.durability))
		dir := filepath.Join(tmp, fmt.Sprintf("variant%d", i))
		edit := func(doc map[string]any) {
			// Each worker sends all its turns as one sender in one chat:
			// the per-sender limit (20 a minute) would refuse nearly all.
			q, _ := doc["queue"].(map[string]any)
			if q == nil {
				q = map[string]any{}
			}
			q["senderPerMinute"], q["senderBurst"] = 1_000_000, 1_000_000
			doc["queue"] = q
			if v.durability != "" {
				doc["store"] = map[string]any{"durability": v.durability}
			}
		}
		if err := shipproc.Init(ctx, o.bin, dir, edit); err != nil {
			return err
		}
		env := shipproc.Env()
		if v.useFake {
			env = fakeEnv
		}
		r, err := measureVariant(ctx, o, client, fake, v, dir, env)
		if err != nil {
			return fmt.Errorf("%s: %w", v.name, err)
		}
		results = append(results, r)
	}
	return report(w, o, startups, results)
}

// measureStartup launches ship count times and returns, sorted, the time
// from launch to the first 200 on /health, polled every millisecond.
func measureStartup(ctx context.Context, bin, dir string, env []string, count int) ([]time.Duration, error) {
	var out []time.Duration
	for range count {
		probe := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		t0 := time.Now()
		p, err := shipproc.Launch(ctx, bin, "ship", dir, 0, env)
		if err != nil {
			return nil, err
		}
		readyCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
		err = p.WaitReady(readyCtx, probe, time.Millisecond)
		took := time.Since(t0)
		cancel()
		if err != nil {
			p.Kill()
			return nil, err
		}
		if err := p.Stop(); err != nil {
			return nil, err
		}
		out = append(out, took)
	}
	slices.Sort(out)
	return out, nil
}

// measureVariant runs one ship process through idle, warm-up and the
// latency runs, then stops it and checks it exits 0.
func measureVariant(ctx context.Context, o options, client *http.Client, fake *fakeopenai.Server, v variant, dir string, env []string) (variantResult, error) {
	r := variantResult{variant: v}
	p, err := shipproc.Launch(ctx, o.bin, "ship", dir, 0, env, v.args...)
	if err != nil {
		return r, err
	}
	defer p.Kill()
	if err := p.WaitReady(ctx, client, 5*time.Millisecond); err != nil {
		return r, err
	}
	time.Sleep(200 * time.Millisecond) // "a moment after ready": let start-up garbage settle
	if r.idleRSS, _, err = p.Memory(); err != nil {
		return r, err
	}
	if err := warmUp(ctx, client, p.URL, o.warmup); err != nil {
		return r, err
	}
	if r.warmRSS, _, err = p.Memory(); err != nil {
		return r, err
	}
	calls0 := fake.RequestCount()
	for _, c := range o.levels {
		lr := runLevel(ctx, client, p.URL, c, o.n, fmt.Sprintf("c%d", c))
		if err := ctx.Err(); err != nil {
			return r, fmt.Errorf("concurrency %d: %w", c, err)
		}
		r.levels = append(r.levels, lr)
	}
	r.modelCalls = fake.RequestCount() - calls0
	if _, r.peakRSS, err = p.Memory(); err != nil {
		return r, err
	}
	return r, p.Stop()
}

func report(w io.Writer, o options, startups []time.Duration, results []variantResult) error {
	shipVersion, goVersion := shipproc.Versions(o.bin)
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, "## Whole-process load run (`go run ./bench/load`)\n\n")
	fmt.Fprintf(b, "- machine: %s, %d CPUs (runtime.NumCPU), %s/%s\n", shipproc.CPUModel(), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(b, "- ship %s built with %s; load program %s\n", shipVersion, goVersion, runtime.Version())
	fmt.Fprintf(b, "- model: a zero-latency fake of the OpenAI API (`internal/fakeopenai`, EchoChatSend: it calls `chat_send`; asked for a summary of a chat's oldest turns, it writes one sentence, as a model asked for 300 words writes a short text, not the transcript back), in the load program's process on the same machine as ship and the load client\n")
	fmt.Fprintf(b, "- %d requests per concurrency level, after %d warm-up turns; every worker has its own chatId; a turn counts when it is 200 with a non-empty `replies`\n", o.n, o.warmup)
	fmt.Fprintf(b, "- every turn appends two ChatStore entries (the user's message, the reply); with durability `always` one fsync makes both durable before the response is sent (the reply is fsynced, which covers the earlier user entry in the same file); `none` never fsyncs\n")
	fmt.Fprintf(b, "- ship's queue runs one turn at a time (queue.concurrency 1, the default), so at concurrency 16 a request mostly waits for the 15 ahead of it\n\n")

	fmt.Fprintf(b, "### Start-up: launch to first 200 on /health (%d launches, polled every 1 ms)\n\n", len(startups))
	fmt.Fprintf(b, "| min | median | max |\n|---:|---:|---:|\n")
	fmt.Fprintf(b, "| %s | %s | %s |\n\n", ms(startups[0]), ms(startups[len(startups)/2]), ms(startups[len(startups)-1]))

	fmt.Fprintf(b, "### Memory (VmRSS / VmHWM)\n\n")
	fmt.Fprintf(b, "| variant | store durability | idle, just after ready | after %d-turn warm-up | peak after the loaded runs |\n", o.warmup)
	fmt.Fprintf(b, "|---|---|---:|---:|---:|\n")
	for _, r := range results {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", r.name, orDefault(r.durability), mib(r.idleRSS), mib(r.warmRSS), mib(r.peakRSS))
	}

	fmt.Fprintf(b, "\n### POST /api/execute\n\n")
	fmt.Fprintf(b, "| variant | store durability | concurrency | turns/s | p50 | p90 | p99 | max | failures |\n")
	fmt.Fprintf(b, "|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		for _, l := range r.levels {
			fmt.Fprintf(b, "| %s | %s | %d | %.0f | %s | %s | %s | %s | %d |\n", r.name, orDefault(r.durability),
				l.concurrency, l.turnsPerSecond(), ms(l.percentile(50)), ms(l.percentile(90)), ms(l.percentile(99)),
				ms(l.percentile(100)), l.failures)
		}
	}
	fmt.Fprintf(b, "\n")
	for _, r := range results {
		turns := 0
		for _, l := range r.levels {
			turns += l.turns
			if l.firstErr != nil {
				fmt.Fprintf(b, "- %s, concurrency %d: first failure: %v\n", r.name, l.concurrency, l.firstErr)
			}
		}
		if r.useFake && turns > 0 {
			fmt.Fprintf(b, "- %s, durability %s: %.2f model calls per turn\n", r.name, orDefault(r.durability), float64(r.modelCalls)/float64(turns))
		}
	}
	return b.Flush()
}

func orDefault(durability string) string {
	if durability == "" {
		return "always (default)"
	}
	return durability
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// loadModel is EchoChatSend, except that a summary call (ship asks for a
// summary of a chat's oldest turns once its history passes the limits: a
// call offering no tools) gets one short sentence. Echoing the whole
// transcript back, as EchoChatSend would, makes a 4 KB summary that rides
// in every later request: a cost of the echo, not of ship.
func loadModel(r fakeopenai.Request) fakeopenai.Response {
	if len(r.Tools) == 0 && len(r.Messages) == 2 && r.Messages[0].Role == "system" {
		return fakeopenai.Response{Content: "The user greeted the assistant many times; it answered each greeting."}
	}
	return fakeopenai.EchoChatSend(r)
}
