// Command cluster is ship's scaling run (issue 17): it starts the real ship
// binary as one process without cluster config (the single-process
// default), then as 1, 2 and 3 replicas with embedded NATS servers routed
// together (JetStream copies R = min(3, replicas)), all at the same
// queue.concurrency, against an in-process fake model that takes a fixed
// time per call. It sends chats × messages through POST /api/send spread
// round-robin over the replicas, counts the task_completed events on the
// replicas' SSE streams, and prints a Markdown table of turns/s and turn
// latency. Every row runs the one binary `go build ./cmd/ship` makes.
//
//	go run ./bench/cluster [-bin ./ship] [-chats 200] [-messages 3] [-delay 200ms] [-calls 2] [-setups 1,3] [-partitions 0] [-idle 0]
//
// Before the load, a cluster setup waits until the replicas have settled
// who holds which partition (every one held once, none over its ceiling
// share); the table shows, per replica, the partitions it held, the
// load's chats that hash onto them and the turns it ran, and each setup's
// turns/s over the 1-replica setup's when that ran too.
//
// Everything runs on loopback on this machine; every wait has a deadline.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/shipproc"
)

// options are the command-line flags.
type options struct {
	bin         string
	chats       int
	messages    int
	delay       time.Duration
	calls       int
	concurrency int
	warmup      int
	senders     int
	partitions  int
	idle        time.Duration
	setups      []setup
	timeout     time.Duration
}

// setup is one way of running ship: replicas 0 is the single-process
// default (no cluster section), n > 0 is n replicas with embedded NATS.
type setup struct {
	replicas int
}

func (s setup) name() string {
	if s.replicas == 0 {
		return "single process (no cluster config)"
	}
	return fmt.Sprintf("cluster, embedded NATS, R%d", min(3, s.replicas))
}

func main() {
	o := options{}
	var setups string
	flag.StringVar(&o.bin, "bin", "", "ship binary to run (default: build ./cmd/ship into a temp folder; run from the module)")
	flag.IntVar(&o.chats, "chats", 200, "chats per setup")
	flag.IntVar(&o.messages, "messages", 3, "messages per chat")
	flag.DurationVar(&o.delay, "delay", 200*time.Millisecond, "how long the fake model takes per call")
	flag.IntVar(&o.calls, "calls", 2, "model calls per turn: 2 (chat_load_history, then chat_send) or 1 (chat_send)")
	flag.IntVar(&o.concurrency, "concurrency", 4, "queue.concurrency of every ship process")
	flag.IntVar(&o.warmup, "warmup", 8, "warm-up turns per process before measuring")
	flag.IntVar(&o.senders, "senders", 16, "concurrent HTTP clients sending the messages")
	flag.IntVar(&o.partitions, "partitions", 0, "cluster.partitions of every replica; 0 leaves ship's default")
	flag.DurationVar(&o.idle, "idle", 0, "before the load, measure each process's CPU use while idle for this long (0: not)")
	flag.StringVar(&setups, "setups", "0,1,2,3", "comma-separated replica counts; 0 is the single-process default")
	flag.DurationVar(&o.timeout, "timeout", 20*time.Minute, "deadline for the whole run")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), `Usage: go run ./bench/cluster [flags]

Runs the real ship binary alone and as 1, 2 and 3 replicas (embedded NATS,
routed, on 127.0.0.1) against an in-process fake model with a fixed delay
per call, sends chats × messages through POST /api/send round-robin over the
replicas, and prints turns/s and latency as Markdown.

Flags:
`)
		flag.PrintDefaults()
	}
	flag.Parse()
	for _, f := range strings.Split(setups, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 || n > 5 {
			fmt.Fprintf(os.Stderr, "cluster: -setups: %q is not a replica count from 0 to 5\n", f)
			os.Exit(2)
		}
		o.setups = append(o.setups, setup{replicas: n})
	}
	if flag.NArg() > 0 || o.chats < 1 || o.messages < 1 || o.delay < 0 || (o.calls != 1 && o.calls != 2) ||
		o.concurrency < 1 || o.warmup < 0 || o.senders < 1 || o.partitions < 0 || o.idle < 0 || o.timeout <= 0 {
		flag.Usage()
		os.Exit(2)
	}

	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintf(os.Stderr, "cluster: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	tmp, err := os.MkdirTemp("", "ship-cluster-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	if o.bin == "" {
		fmt.Fprintln(os.Stderr, "cluster: building ship ...")
		if o.bin, err = shipproc.Build(ctx, tmp); err != nil {
			return err
		}
	}
	fake, err := fakeopenai.StartWithOptions(slowModel(o.delay, o.calls), fakeopenai.Options{MaxRecorded: 64})
	if err != nil {
		return err
	}
	defer fake.Close()

	// A setup that fails is reported in the table and the run goes on;
	// the exit status says something failed.
	var results []result
	var failed []error
	for i, s := range o.setups {
		fmt.Fprintf(os.Stderr, "cluster: setup %d of %d: %s, %d process(es) ...\n", i+1, len(o.setups), s.name(), max(1, s.replicas))
		r, err := measure(ctx, o, fake, s, filepath.Join(tmp, fmt.Sprintf("setup%d", i)))
		if err != nil {
			err = fmt.Errorf("%s, %d replicas: %w", s.name(), s.replicas, err)
			fmt.Fprintf(os.Stderr, "cluster: %v\n", err)
			r = result{setup: s, err: err}
			failed = append(failed, err)
		} else {
			fmt.Fprintf(os.Stderr, "cluster:   %d turns in %.1f s: %.1f turns/s; per replica %s\n", r.turns, r.wall.Seconds(), r.turnsPerSecond(), r.spread(o))
		}
		results = append(results, r)
		if ctx.Err() != nil {
			break
		}
	}
	if err := report(os.Stdout, o, results); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d setups failed (above)", len(failed), len(o.setups))
	}
	return nil
}

// slowModel answers after delay. With calls 1 it replies at once with
// chat_send "echo: <text>" (EchoChatSend; ship ends the turn after
// chat_send without calling the model again). With calls 2 it first calls
// chat_load_history (an agent looking something up), then replies.
func slowModel(delay time.Duration, calls int) fakeopenai.Handler {
	return func(r fakeopenai.Request) fakeopenai.Response {
		time.Sleep(delay) // the model's latency, not synchronisation
		if calls == 2 && r.HasTool("chat_load_history") && len(r.ToolResults()) == 0 {
			return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: "chat_load_history", Arguments: `{"limit":5}`}}}
		}
		if len(r.ToolResults()) > 0 && r.HasTool("chat_send") {
			// EchoChatSend would end here with an empty answer.
			args, _ := json.Marshal(map[string]string{"text": "echo: " + r.LastUser()}) // a string map always encodes
			return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: "chat_send", Arguments: string(args)}}}
		}
		return fakeopenai.EchoChatSend(r)
	}
}
