package queue

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/internal/logbuf"
)

// newTestQueue builds a queue that is stopped when the test ends, so no
// worker goroutine outlives its test.
func newTestQueue(t *testing.T, h Handler[string], opts Options) *Queue[string] {
	t.Helper()
	q := New(h, opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // don't wait on handlers a failed test left blocked
		_ = q.Stop(ctx)
	})
	return q
}

func mustEnqueue(t *testing.T, q *Queue[string], item Item[string]) Ticket {
	t.Helper()
	tk, err := q.Enqueue(item)
	if err != nil {
		t.Fatalf("Enqueue(%s/%s): %v", item.ChatKey, item.Value, err)
	}
	return tk
}

// queueGate makes one item block until released, so the test can line up
// a backlog behind it deterministically.
type queueGate struct {
	started chan string // receives the Instructions of every item as it starts
	release chan struct{}
}

func newQueueGate() *queueGate {
	return &queueGate{started: make(chan string, 1024), release: make(chan struct{})}
}

func (g *queueGate) handler(block string) Handler[string] {
	return func(ctx context.Context, item Item[string]) {
		g.started <- item.Value
		if item.Value == block {
			<-g.release
		}
	}
}

func TestQueueDefaults(t *testing.T) {
	q := newTestQueue(t, func(context.Context, Item[string]) {}, Options{})
	st := q.Stats()
	if st.Capacity != 1000 || st.Concurrency != 1 || q.opts.RunTimeout != 10*time.Minute {
		t.Fatalf("defaults: %+v runTimeout=%v", st, q.opts.RunTimeout)
	}
}

func TestQueueSerialFIFOAcrossChats(t *testing.T) {
	g := newQueueGate()
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	h := func(ctx context.Context, item Item[string]) {
		mu.Lock()
		order = append(order, item.Value)
		mu.Unlock()
		g.handler("0")(ctx, item)
		wg.Done()
	}
	q := newTestQueue(t, h, Options{Concurrency: 1})
	chats := []string{"a", "b", "c", "a", "c", "b", "b", "a"}
	var want []string
	wg.Add(len(chats))
	for i, c := range chats {
		mustEnqueue(t, q, Item[string]{ChatKey: c, Value: strconv.Itoa(i)})
		want = append(want, strconv.Itoa(i))
	}
	close(g.release)
	wg.Wait()
	if !slices.Equal(order, want) {
		t.Fatalf("order = %v, want global FIFO %v", order, want)
	}
}

func TestQueuePerChatOrderConcurrent(t *testing.T) {
	const chats, perChat = 50, 20
	var (
		mu       sync.Mutex
		inFlight = map[string]int{}
		seen     = map[string][]int{}
		overlaps []string
		wg       sync.WaitGroup
	)
	h := func(_ context.Context, item Item[string]) {
		defer wg.Done()
		seq, _ := strconv.Atoi(item.Value)
		mu.Lock()
		inFlight[item.ChatKey]++
		if inFlight[item.ChatKey] > 1 {
			overlaps = append(overlaps, item.ChatKey)
		}
		seen[item.ChatKey] = append(seen[item.ChatKey], seq)
		mu.Unlock()
		runtime.Gosched() // widen the window in which an overlap would show
		mu.Lock()
		inFlight[item.ChatKey]--
		mu.Unlock()
	}
	q := newTestQueue(t, h, Options{Concurrency: 4, Capacity: chats * perChat})
	wg.Add(chats * perChat)
	for s := range perChat {
		for c := range chats {
			mustEnqueue(t, q, Item[string]{ChatKey: fmt.Sprintf("chat-%d", c), Value: strconv.Itoa(s)})
		}
	}
	wg.Wait()
	if len(overlaps) > 0 {
		t.Fatalf("items of one chat ran at once in %v", overlaps)
	}
	for c := range chats {
		key := fmt.Sprintf("chat-%d", c)
		got := seen[key]
		if len(got) != perChat || !slices.IsSorted(got) {
			t.Fatalf("%s ran %v, want 0..%d ascending", key, got, perChat-1)
		}
	}
}

func TestQueueChatsRunSideBySide(t *testing.T) {
	var arrived sync.WaitGroup
	release := make(chan struct{})
	h := func(context.Context, Item[string]) {
		arrived.Done()
		<-release
	}
	q := newTestQueue(t, h, Options{Concurrency: 4})
	arrived.Add(4)
	for _, c := range []string{"d", "b", "c", "a"} {
		if tk := mustEnqueue(t, q, Item[string]{ChatKey: c}); tk.Position != 0 {
			t.Fatalf("chat %s: Position %d, want 0 with idle workers", c, tk.Position)
		}
	}
	arrived.Wait() // only returns if all four handlers are blocked at once
	st := q.Stats()
	if st.Running != 4 || !slices.Equal(st.RunningChatKeys, []string{"a", "b", "c", "d"}) {
		t.Fatalf("stats = %+v", st)
	}
	if tk := mustEnqueue(t, q, Item[string]{ChatKey: "e"}); tk.Position != 1 {
		t.Fatalf("fifth item Position %d, want 1", tk.Position)
	}
	arrived.Add(1) // for chat e once a worker frees up
	close(release)
	arrived.Wait()
}

func TestQueueFull(t *testing.T) {
	g := newQueueGate()
	q := newTestQueue(t, g.handler("block"), Options{Concurrency: 2, Capacity: 2})
	mustEnqueue(t, q, Item[string]{ChatKey: "a", Value: "block"})
	<-g.started
	mustEnqueue(t, q, Item[string]{ChatKey: "a", Value: "w1"})
	mustEnqueue(t, q, Item[string]{ChatKey: "a", Value: "w2"})

	_, err := q.Enqueue(Item[string]{ChatKey: "a", Value: "w3"})
	if !errors.Is(err, ErrQueueFull) {
		t.Fatalf("err = %v, want ErrQueueFull", err)
	}
	var full *QueueFullError
	if !errors.As(err, &full) || full.Capacity != 2 || full.Waiting != 2 {
		t.Fatalf("errors.As: %v %+v", err, full)
	}
	if st := q.Stats(); st.Waiting != 2 || len(q.Pending()) != 2 {
		t.Fatalf("refused item was enqueued: %+v", st)
	}
	// A new chat that an idle worker can start at once never waits, so a
	// full backlog does not turn it away.
	if tk, err := q.Enqueue(Item[string]{ChatKey: "b", Value: "now"}); err != nil || tk.Position != 0 {
		t.Fatalf("startable item: %+v %v", tk, err)
	}
	if got := <-g.started; got != "now" {
		t.Fatalf("started %q, want now", got)
	}
	close(g.release)
}

func TestQueuePositions(t *testing.T) {
	g := newQueueGate()
	q := newTestQueue(t, g.handler("a1"), Options{Concurrency: 1})
	tA1 := mustEnqueue(t, q, Item[string]{ChatKey: "a", Value: "a1"})
	tB1 := mustEnqueue(t, q, Item[string]{ChatKey: "b", Value: "b1"})
	tC1 := mustEnqueue(t, q, Item[string]{ChatKey: "c", Value: "c1"})
	tA2 := mustEnqueue(t, q, Item[string]{ChatKey: "a", Value: "a2"})
	for _, c := range []struct {
		tk   Ticket
		want int
	}{{tA1, 0}, {tB1, 1}, {tC1, 2}, {tA2, 3}} {
		if c.tk.Position != c.want {
			t.Fatalf("ticket %+v, want position %d", c.tk, c.want)
		}
		if p, ok := q.Position(c.tk.ID); !ok || p != c.want {
			t.Fatalf("Position(%s) = %d,%v want %d", c.tk.ID, p, ok, c.want)
		}
	}
	if tA1.ID == tB1.ID || !strings.HasPrefix(tA1.ID, "q-") {
		t.Fatalf("ids %q %q", tA1.ID, tB1.ID)
	}
	<-g.started // a1
	close(g.release)
	<-g.started // b1 runs, so a1 has ended (one worker)
	if _, ok := q.Position(tA1.ID); ok {
		t.Fatal("finished item still has a position")
	}
	if _, ok := q.Position("nope"); ok {
		t.Fatal("unknown id has a position")
	}
	// b1 may already have ended too; c1 and a2 can only have moved up.
	if p, ok := q.Position(tA2.ID); ok && p > 2 {
		t.Fatalf("a2 position %d after a1 ended, want ≤ 2", p)
	}
}

func TestQueuePositionUpdatesAsItemsStart(t *testing.T) {
	release := map[string]chan struct{}{"x": make(chan struct{}), "y": make(chan struct{})}
	started := make(chan string, 4)
	h := func(_ context.Context, item Item[string]) {
		started <- item.Value
		if ch, ok := release[item.Value]; ok {
			<-ch
		}
	}
	q := newTestQueue(t, h, Options{})
	tx := mustEnqueue(t, q, Item[string]{ChatKey: "k", Value: "x"})
	ty := mustEnqueue(t, q, Item[string]{ChatKey: "m", Value: "y"})
	tz := mustEnqueue(t, q, Item[string]{ChatKey: "k", Value: "z"})
	<-started
	if p, _ := q.Position(ty.ID); p != 1 {
		t.Fatalf("y position %d, want 1", p)
	}
	if p, _ := q.Position(tz.ID); p != 2 {
		t.Fatalf("z position %d, want 2", p)
	}
	close(release["x"])
	<-started // y
	if p, ok := q.Position(ty.ID); !ok || p != 0 {
		t.Fatalf("running y position %d,%v want 0,true", p, ok)
	}
	if p, _ := q.Position(tz.ID); p != 1 {
		t.Fatalf("z position %d, want 1", p)
	}
	if _, ok := q.Position(tx.ID); ok {
		t.Fatal("x finished but still known")
	}
	close(release["y"])
	<-started // z
}

func TestQueueRunTimeoutCancelsHandler(t *testing.T) {
	errc := make(chan error, 1)
	q := newTestQueue(t, func(ctx context.Context, item Item[string]) {
		<-ctx.Done()
		errc <- ctx.Err()
	}, Options{RunTimeout: 1}) // 1ns: the deadline is already past
	mustEnqueue(t, q, Item[string]{ChatKey: "a"})
	if err := <-errc; err != context.DeadlineExceeded {
		t.Fatalf("ctx.Err() = %v, want DeadlineExceeded", err)
	}
}

func TestQueueStopFinishesRunningKeepsPending(t *testing.T) {
	g := newQueueGate()
	var ran sync.Map
	h := func(ctx context.Context, item Item[string]) {
		ran.Store(item.Value, true)
		g.handler("run")(ctx, item)
	}
	// Capacity 2 keeps probes made before Stop from entering the backlog.
	q := newTestQueue(t, h, Options{Capacity: 2})
	mustEnqueue(t, q, Item[string]{ChatKey: "a", Value: "run"})
	<-g.started
	mustEnqueue(t, q, Item[string]{ChatKey: "b", Value: "p1"})
	mustEnqueue(t, q, Item[string]{ChatKey: "a", Value: "p2"})

	stopErr := make(chan error, 1)
	go func() { stopErr <- q.Stop(context.Background()) }()
	<-q.stopping
	if _, err := q.Enqueue(Item[string]{ChatKey: "c"}); !errors.Is(err, ErrQueueStopped) {
		t.Fatalf("Enqueue during Stop: %v, want ErrQueueStopped", err)
	}
	select {
	case err := <-stopErr:
		t.Fatalf("Stop returned %v while an item was still running", err)
	default:
	}
	close(g.release)
	if err := <-stopErr; err != nil {
		t.Fatalf("Stop: %v", err)
	}
	var pending []string
	for _, it := range q.Pending() {
		pending = append(pending, it.Value)
	}
	if !slices.Equal(pending, []string{"p1", "p2"}) {
		t.Fatalf("Pending = %v", pending)
	}
	for _, name := range pending {
		if _, ok := ran.Load(name); ok {
			t.Fatalf("pending item %s was started", name)
		}
	}
	if _, err := q.Enqueue(Item[string]{ChatKey: "c"}); !errors.Is(err, ErrQueueStopped) {
		t.Fatalf("Enqueue after Stop: %v", err)
	}
}

func TestQueueStopExpiredContextCancelsRunning(t *testing.T) {
	started := make(chan struct{})
	errc := make(chan error, 1)
	q := newTestQueue(t, func(ctx context.Context, item Item[string]) {
		close(started)
		<-ctx.Done()
		errc <- ctx.Err()
	}, Options{RunTimeout: -1})
	mustEnqueue(t, q, Item[string]{ChatKey: "a"})
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := q.Stop(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stop = %v, want context.Canceled", err)
	}
	if err := <-errc; err != context.Canceled {
		t.Fatalf("handler ctx.Err() = %v, want Canceled", err)
	}
}

func TestQueuePanicDoesNotStopNextItem(t *testing.T) {
	var logs logbuf.Buffer
	next := make(chan string, 1)
	q := newTestQueue(t, func(_ context.Context, item Item[string]) {
		if item.Value == "boom" {
			panic("kaboom")
		}
		next <- item.Value
	}, Options{Logger: zerolog.New(&logs)})
	tk := mustEnqueue(t, q, Item[string]{ChatKey: "a", Value: "boom"})
	mustEnqueue(t, q, Item[string]{ChatKey: "a", Value: "after"})
	if got := <-next; got != "after" {
		t.Fatalf("next item = %q", got)
	}
	out := logs.String()
	for _, want := range []string{`"chatKey":"a"`, `"itemId":"` + tk.ID + `"`, `"panic":"kaboom"`} {
		if !strings.Contains(out, want) {
			t.Fatalf("log %q lacks %s", out, want)
		}
	}
}

func TestQueueRejectsBadItems(t *testing.T) {
	g := newQueueGate()
	q := newTestQueue(t, g.handler("hold"), Options{})
	if _, err := q.Enqueue(Item[string]{}); !errors.Is(err, ErrInvalidItem) {
		t.Fatalf("missing chat key: %v", err)
	}
	mustEnqueue(t, q, Item[string]{ID: "q-1", ChatKey: "a", Value: "hold"})
	<-g.started
	if _, err := q.Enqueue(Item[string]{ID: "q-1", ChatKey: "b"}); !errors.Is(err, ErrDuplicateID) {
		t.Fatalf("duplicate id: %v", err)
	}
	// The generator skips the hand-picked q-1.
	if tk := mustEnqueue(t, q, Item[string]{ChatKey: "b"}); tk.ID == "q-1" {
		t.Fatalf("assigned id collides: %s", tk.ID)
	}
	close(g.release)
}
