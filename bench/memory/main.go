// Command memory measures ship's memory with very many chats (issue 8,
// item 4): it builds the real core (adapters.Engine: ChatStore, runtime with
// its in-memory history LRU, global queue, ingress) in a temp folder with the
// offline model, feeds N distinct chats × M messages through
// the engine's front door (Submit), and prints a Markdown table for BENCHMARKS.md: resident
// memory, Go heap, chats in memory and open files after 1k, 10k, 50k and
// 100k chats.
//
//	go run ./bench/memory [-chats 100000] [-messages 3] [-timeout 10m]
//
// The ChatStore runs with durability none (no fsync) to keep the run short;
// that changes time, not memory. History limits are the engine's defaults.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/internal/procstat"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/llm"
	"github.com/shipmyagent/ship/runtime/queue"
	"github.com/shipmyagent/ship/tools"
)

// options are the command-line flags.
type options struct {
	chats       int
	messages    int
	concurrency int
	timeout     time.Duration
	dir         string
}

func main() {
	var o options
	flag.IntVar(&o.chats, "chats", 100_000, "distinct chats to feed")
	flag.IntVar(&o.messages, "messages", 3, "messages per chat (each waits for the previous one's run)")
	flag.IntVar(&o.concurrency, "concurrency", 4, "queue workers (and feeders)")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "deadline for the whole run; the rows measured by then are printed")
	flag.StringVar(&o.dir, "dir", "", "folder for the ChatStore (default: a temp folder, removed afterwards)")
	flag.Usage = func() {
		fmt.Fprint(flag.CommandLine.Output(), `Usage: go run ./bench/memory [flags]

Feeds many distinct chats through ship's core (offline model, durability
none, default history limits) and prints RSS, Go heap, chats in memory and
open files at checkpoints as Markdown.

Flags:
`)
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 || o.chats < 1 || o.messages < 1 || o.concurrency < 1 || o.timeout <= 0 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "memory: %v\n", err)
		os.Exit(1)
	}
}

// sample is one checkpoint's measurements.
type sample struct {
	chats, turns   int
	rss, hwm       int64 // bytes
	heapInuse      uint64
	inMemory       int
	openFiles      int
	goroutines     int
	phaseTurnsPerS float64
	elapsed        time.Duration
	partial        bool // the step was cut short (deadline or error)
}

// channel is the platform the fed messages claim to come from.
const channel = chat.ChannelTelegram

func run(ctx context.Context, o options, out io.Writer) error {
	dir := o.dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "ship-memory-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	eng, err := engine.New(engine.Options{
		Tools:      tools.Default,
		ChatsDir:   filepath.Join(dir, ".ship", "chats"),
		Durability: chat.DurabilityNone,
		Model:      llm.NewOffline(),
		Queue:      queue.Options{Concurrency: o.concurrency},
		Logger:     zerolog.New(io.Discard),
	})
	if err != nil {
		return err
	}
	eng.Register(channel, dispatch.DispatcherFunc(func(context.Context, dispatch.RequestContext, string) error { return nil }))

	base, err := measure(eng, 0, 0, 0, 0)
	if err != nil {
		_, _ = eng.Close(context.Background())
		return err
	}
	var samples []sample
	start, done := time.Now(), 0
	var runErr error
	for _, upTo := range checkpoints(o.chats) {
		phaseStart := time.Now()
		n, feedErr := feed(ctx, eng, o, done, upTo)
		done += n
		perS := float64(n*o.messages) / time.Since(phaseStart).Seconds()
		s, err := measure(eng, done, done*o.messages, perS, time.Since(start))
		if err != nil {
			runErr = err
			break
		}
		if n > 0 {
			// A step cut short by the deadline is measured too: it is the
			// largest run that fit.
			s.partial = feedErr != nil
			samples = append(samples, s)
			fmt.Fprintf(os.Stderr, "memory: %d chats, RSS %s, heap %s, %d chats in memory, %d fds, %.0f turns/s\n",
				s.chats, mib(s.rss), mib(int64(s.heapInuse)), s.inMemory, s.openFiles, s.phaseTurnsPerS)
		}
		if feedErr != nil {
			runErr = feedErr
			break
		}
	}
	if _, err := eng.Close(context.Background()); err != nil && runErr == nil {
		runErr = fmt.Errorf("closing the engine: %w", err)
	}
	report(out, o, base, samples, done, runErr)
	if runErr != nil && !errors.Is(runErr, context.DeadlineExceeded) {
		return runErr
	}
	return nil
}

// checkpoints are the chat counts to measure at: 1k, 10k, 50k, 100k and the
// total, as far as the total goes.
func checkpoints(total int) []int {
	var out []int
	for _, c := range []int{1_000, 10_000, 50_000, 100_000} {
		if c < total {
			out = append(out, c)
		}
	}
	return append(out, total)
}

// feed runs chats [from, upTo) through the engine: o.concurrency feeders
// each take the next chat and send its messages one after another, waiting
// for each run to end. It returns how many chats were fed completely.
func feed(ctx context.Context, eng *engine.Engine, o options, from, upTo int) (int, error) {
	next := make(chan int)
	var mu sync.Mutex
	var firstErr error
	fed := 0
	var wg sync.WaitGroup
	for range o.concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range next {
				err := feedChat(ctx, eng, id, o.messages)
				mu.Lock()
				if err == nil {
					fed++
				} else if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}()
	}
	for id := from; id < upTo; id++ {
		mu.Lock()
		failed := firstErr != nil
		mu.Unlock()
		if failed || ctx.Err() != nil {
			break
		}
		next <- id
	}
	close(next)
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	return fed, firstErr
}

// feedChat sends one chat's messages, each after the previous one's run.
func feedChat(ctx context.Context, eng *engine.Engine, id, messages int) error {
	chatID := strconv.Itoa(100_000_000 + id)
	key := "telegram:chat:" + chatID
	done := make(chan ingress.Outcome, 1)
	for m := range messages {
		_, err := eng.Submit(ctx, ingress.Submission{
			Channel: channel,
			ChatKey: key,
			Message: ingress.IncomingChatMessage{
				ChatID: chatID, ChatType: "private", UserID: chatID, Username: "user" + chatID,
				MessageID: strconv.Itoa(m + 1),
				Text:      fmt.Sprintf("message %d from chat %d: how are you today?", m+1, id),
			},
			OnDone: func(o ingress.Outcome) { done <- o },
		})
		if err != nil {
			return fmt.Errorf("chat %d message %d: %w", id, m+1, err)
		}
		select {
		case o := <-done:
			if o.Err != nil {
				return fmt.Errorf("chat %d message %d: run failed: %w", id, m+1, o.Err)
			}
			if !o.Result.Delivered {
				return fmt.Errorf("chat %d message %d: no reply delivered", id, m+1)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// measure takes a checkpoint. The Go heap is read after a GC so that it
// counts live memory; RSS is read before it, as the process held it.
func measure(eng *engine.Engine, chats, turns int, turnsPerS float64, elapsed time.Duration) (sample, error) {
	rss, hwm, err := procstat.Memory(0)
	if err != nil {
		return sample{}, err
	}
	fds, err := openFiles()
	if err != nil {
		return sample{}, err
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return sample{
		chats: chats, turns: turns, rss: rss, hwm: hwm, heapInuse: ms.HeapInuse,
		inMemory: eng.ChatsInMemory(), openFiles: fds, goroutines: runtime.NumGoroutine(),
		phaseTurnsPerS: turnsPerS, elapsed: elapsed,
	}, nil
}

// openFiles counts this process's file descriptors (Linux), less the one
// used to list them.
func openFiles() (int, error) {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, err
	}
	return len(entries) - 1, nil
}

// report prints the run as Markdown.
func report(out io.Writer, o options, base sample, samples []sample, done int, runErr error) {
	fmt.Fprintf(out, "### Memory with many chats (`go run ./bench/memory -chats %d`)\n\n", o.chats)
	fmt.Fprintf(out, "- machine: %d CPUs (runtime.NumCPU), %s/%s, %s\n", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Fprintf(out, "- in-process adapters.Engine, offline model, ChatStore durability none, queue concurrency %d, %d messages per chat, each waiting for the previous run (OnDone); no-op %s dispatcher\n",
		o.concurrency, o.messages, channel)
	fmt.Fprintf(out, "- history limits: the defaults (EngineOptions.History zero: %s); ChatStore open-file cache: its default\n", defaultLimits)
	fmt.Fprintf(out, "- before the first message: VmRSS %s, Go heap in use %s, %d open files, %d goroutines\n\n",
		mib(base.rss), mib(int64(base.heapInuse)), base.openFiles, base.goroutines)
	fmt.Fprintln(out, "| chats | turns | VmRSS | VmHWM (peak) | Go heap in use (after GC) | chats in memory | open files | goroutines | turns/s (this step) | elapsed |")
	fmt.Fprintln(out, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, s := range samples {
		chats := thousands(s.chats)
		if s.partial {
			chats += " (stopped here)"
		}
		fmt.Fprintf(out, "| %s | %s | %s | %s | %s | %d | %d | %d | %.0f | %s |\n",
			chats, thousands(s.turns), mib(s.rss), mib(s.hwm), mib(int64(s.heapInuse)),
			s.inMemory, s.openFiles, s.goroutines, s.phaseTurnsPerS, s.elapsed.Round(time.Second))
	}
	if runErr != nil {
		fmt.Fprintf(out, "\nStopped after %s of %s chats (chats fed completely): %v.\n", thousands(done), thousands(o.chats), runErr)
	}
}

// defaultLimits describes the zero agent.HistoryLimits, as documented in
// runtime/agent (the engine passes them on unchanged).
const defaultLimits = "500 chats in memory (LRU), 60 messages and 48,000 characters per chat, 4,000 characters per tool output"

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// thousands formats n with comma separators: 100000 → "100,000".
func thousands(n int) string {
	s := strconv.Itoa(n)
	var parts []string
	for len(s) > 3 {
		parts = append(parts, s[len(s)-3:])
		s = s[:len(s)-3]
	}
	parts = append(parts, s)
	slices.Reverse(parts)
	return strings.Join(parts, ",")
}
