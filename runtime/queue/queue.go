// Package queue is ship's one global QueryQueue: every platform and the
// HTTP API enqueue chat turns here, turns of one chat run one at a time and
// in order, turns of different chats share a fixed number of workers, and the
// backlog is bounded. It knows nothing of what a turn is: the payload is a
// type parameter.
package queue

import (
	"container/heap"
	"container/list"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Defaults applied by New when an option is left at zero.
const (
	// defaultQueueCapacity bounds the backlog so a flood answers "busy" instead
	// of growing memory without limit; clients rely on at least 1,000.
	defaultQueueCapacity = 1000
	// defaultQueueConcurrency keeps the seed's behaviour: one serial brain.
	defaultQueueConcurrency = 1
	// defaultQueueRunTimeout stops one stuck run from holding a worker forever.
	defaultQueueRunTimeout = 10 * time.Minute
)

var (
	// ErrQueueFull is the sentinel behind every *QueueFullError, so callers
	// can map a full queue to 503/429 or a "busy" reply with errors.Is.
	ErrQueueFull = errors.New("queue full")
	// ErrQueueStopped is returned by Enqueue once Stop has begun: a message
	// that arrives during shutdown must be refused, not silently dropped.
	ErrQueueStopped = errors.New("queue stopped")
	// ErrInvalidItem is returned by Enqueue for an item without a ChatKey,
	// since per-chat ordering is impossible without one.
	ErrInvalidItem = errors.New("invalid queue item")
	// ErrDuplicateID is returned by Enqueue when the item's ID is already
	// waiting or running, so a re-delivered message with a caller-chosen ID
	// runs once and Position lookups stay unambiguous.
	ErrDuplicateID = errors.New("queue item id already queued")
)

// QueueFullError reports a refused Enqueue together with the numbers a caller
// may want to show or log. It wraps ErrQueueFull.
type QueueFullError struct {
	Capacity int // the configured maximum of waiting items
	Waiting  int // items waiting when the Enqueue was refused
}

// Error implements error.
func (e *QueueFullError) Error() string {
	return fmt.Sprintf("queue full: %d of %d waiting", e.Waiting, e.Capacity)
}

// Unwrap lets errors.Is(err, ErrQueueFull) match.
func (e *QueueFullError) Unwrap() error { return ErrQueueFull }

// Item is one unit of work: a chat turn to run, with its payload.
type Item[T any] struct {
	// ID is assigned as "q-<n>" (unique within the queue) when left empty.
	ID string
	// ChatKey is required: items of one chat run one at a time, in order.
	ChatKey string
	// Enqueued is set by Enqueue, overwriting any caller value, so queue
	// latency is measured from the moment the queue accepted the item.
	Enqueued time.Time
	// Value is what the handler needs to run the turn.
	Value T
}

// Handler runs one item. ctx carries the per-item run timeout and is
// cancelled when Stop's deadline passes. A handler that ignores ctx keeps
// its worker busy until it returns.
type Handler[T any] func(ctx context.Context, item Item[T])

// Options configures a Queue. Zero values pick the defaults.
type Options struct {
	Capacity    int           // max items WAITING (not counting running ones); 0 → 1000
	Concurrency int           // workers; 0 → 1 (the seed's serial brain)
	RunTimeout  time.Duration // per item; 0 → 10 minutes; negative → no timeout
	Logger      zerolog.Logger
}

// Ticket is what Enqueue hands back: enough to tell the user where they stand.
type Ticket struct {
	ID string
	// Position is 0 when the item starts now, else N ≥ 1: the item is N-th in
	// line (1 + the waiting items that arrived before it; a running item of
	// the same chat keeps it ≥ 1 even when workers are idle).
	Position int
}

// Stats is a snapshot for status endpoints and logs.
type Stats struct {
	Capacity        int
	Concurrency     int
	Waiting         int
	Running         int
	RunningChatKeys []string // sorted, for stable output
}

// queueEntry is an item with the bookkeeping the scheduler needs.
type queueEntry[T any] struct {
	item    Item[T]
	seq     uint64        // arrival order; the heap key of its lane's head
	lane    *chatLane[T]  // the chat it belongs to
	elem    *list.Element // its place in q.order while waiting; nil once running
	running bool
}

// chatLane is one chat's FIFO. A lane is in the ready heap exactly when it has
// waiting items and none of its items runs: that keeps "never two of one chat
// at once" a structural fact rather than a check.
type chatLane[T any] struct {
	key     string
	items   []*queueEntry[T] // waiting, oldest first
	running *queueEntry[T]
}

// readyHeap orders runnable chats by their head item's arrival, so a free
// worker always takes the earliest-arrived item it is allowed to run; with
// one worker that is exactly global FIFO.
type readyHeap[T any] []*chatLane[T]

func (h readyHeap[T]) Len() int           { return len(h) }
func (h readyHeap[T]) Less(i, j int) bool { return h[i].items[0].seq < h[j].items[0].seq }
func (h readyHeap[T]) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *readyHeap[T]) Push(x any)        { *h = append(*h, x.(*chatLane[T])) }
func (h *readyHeap[T]) Pop() any {
	old, n := *h, len(*h)
	l := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return l
}

// Queue is the QueryQueue: the one global queue that feeds the one agent
// runtime. Every
// adapter and the HTTP API enqueue here, so ordering and back-pressure are
// decided in a single place. Scheduling happens under mu at the moment state
// changes (Enqueue, an item ending): an item is handed to an idle worker over
// a buffered channel, so "running" is exact and Positions are never stale.
type Queue[T any] struct {
	handler Handler[T]
	opts    Options // with defaults applied

	// work carries items already marked running to the workers. Its buffer
	// equals concurrency and at most concurrency items run, so a send made
	// under mu never blocks.
	work chan *queueEntry[T]
	// baseCtx parents every run; cancel is how Stop's deadline reaches the
	// running handlers.
	baseCtx context.Context
	cancel  context.CancelFunc
	// stopping is closed when Stop begins, so anyone (tests included) can
	// observe intake closing without polling.
	stopping chan struct{}
	done     chan struct{} // closed when every worker has exited

	mu      sync.Mutex
	stopped bool
	seq     uint64
	nextID  uint64
	lanes   map[string]*chatLane[T]
	ready   readyHeap[T]
	order   *list.List // waiting entries in arrival order
	byID    map[string]*queueEntry[T]
	running int
}

// New builds the queue and starts its workers. h must not be nil.
func New[T any](h Handler[T], opts Options) *Queue[T] {
	if h == nil {
		panic("queue: New with nil handler")
	}
	if opts.Capacity <= 0 {
		opts.Capacity = defaultQueueCapacity
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = defaultQueueConcurrency
	}
	if opts.RunTimeout == 0 {
		opts.RunTimeout = defaultQueueRunTimeout
	}
	ctx, cancel := context.WithCancel(context.Background())
	q := &Queue[T]{
		handler:  h,
		opts:     opts,
		work:     make(chan *queueEntry[T], opts.Concurrency),
		baseCtx:  ctx,
		cancel:   cancel,
		stopping: make(chan struct{}),
		done:     make(chan struct{}),
		lanes:    make(map[string]*chatLane[T]),
		order:    list.New(),
		byID:     make(map[string]*queueEntry[T]),
	}
	var wg sync.WaitGroup
	wg.Add(q.opts.Concurrency)
	for range q.opts.Concurrency {
		go func() { defer wg.Done(); q.worker() }()
	}
	go func() { wg.Wait(); close(q.done) }()
	return q
}

// Enqueue adds item and says where it stands. It fails with ErrQueueStopped
// after Stop, with a *QueueFullError (wrapping ErrQueueFull) when Capacity
// items already wait and this one would have to wait too, with
// ErrInvalidItem when ChatKey is empty and with ErrDuplicateID when item.ID
// is already queued. On error nothing is enqueued.
func (q *Queue[T]) Enqueue(item Item[T]) (Ticket, error) {
	if item.ChatKey == "" {
		return Ticket{}, fmt.Errorf("%w: chat key is required", ErrInvalidItem)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.admitsLocked(item.ChatKey); err != nil {
		return Ticket{}, err
	}
	lane := q.lanes[item.ChatKey]
	if item.ID == "" {
		item.ID = q.newIDLocked()
	} else if _, dup := q.byID[item.ID]; dup {
		return Ticket{}, fmt.Errorf("%w: %q", ErrDuplicateID, item.ID)
	}
	item.Enqueued = time.Now()

	if lane == nil {
		lane = &chatLane[T]{key: item.ChatKey}
		q.lanes[item.ChatKey] = lane
	}
	q.seq++
	e := &queueEntry[T]{item: item, seq: q.seq, lane: lane}
	e.elem = q.order.PushBack(e)
	q.byID[item.ID] = e
	lane.items = append(lane.items, e)
	if lane.running == nil && len(lane.items) == 1 {
		heap.Push(&q.ready, lane)
	}
	q.dispatchLocked()

	if e.running {
		return Ticket{ID: item.ID}, nil
	}
	// The new item arrived last, so every other waiting item is ahead of it.
	return Ticket{ID: item.ID, Position: q.order.Len()}, nil
}

// Admits reports why an item of chatKey would be refused now
// (ErrQueueStopped, or a *QueueFullError), or nil when Enqueue would take
// it. A caller checks before it records a message, so a refusal leaves
// nothing half done; Enqueue still decides, as the queue may fill between
// the two calls.
func (q *Queue[T]) Admits(chatKey string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.admitsLocked(chatKey)
}

// admitsLocked is Admits with q.mu held: Enqueue's refusal rule.
func (q *Queue[T]) admitsLocked(chatKey string) error {
	if q.stopped {
		return ErrQueueStopped
	}
	// A lane exists only while its chat has an item waiting or running, and
	// after dispatchLocked an idle worker means no chat is runnable: so a new
	// chat with a free worker starts now. Such an item never waits and does
	// not count against Capacity: a backlog in one chat must not turn away a
	// chat that an idle worker could serve right now.
	startsNow := q.lanes[chatKey] == nil && q.running < q.opts.Concurrency
	if !startsNow && q.order.Len() >= q.opts.Capacity {
		return &QueueFullError{Capacity: q.opts.Capacity, Waiting: q.order.Len()}
	}
	return nil
}

// newIDLocked returns the next "q-<n>" not in use; it skips IDs a caller
// chose by hand so assigned IDs stay unique.
func (q *Queue[T]) newIDLocked() string {
	for {
		q.nextID++
		id := "q-" + strconv.FormatUint(q.nextID, 10)
		if _, taken := q.byID[id]; !taken {
			return id
		}
	}
}

// dispatchLocked hands runnable items to idle workers, earliest arrival
// first. Afterwards either every worker is busy or no chat is runnable, which
// is what lets Enqueue tell "starts now" exactly.
func (q *Queue[T]) dispatchLocked() {
	for !q.stopped && q.running < q.opts.Concurrency && q.ready.Len() > 0 {
		lane := heap.Pop(&q.ready).(*chatLane[T])
		e := lane.items[0]
		lane.items[0] = nil // let the GC have it once it ends
		lane.items = lane.items[1:]
		q.order.Remove(e.elem)
		e.elem = nil
		e.running = true
		lane.running = e
		q.running++
		q.work <- e // never blocks: buffer == concurrency ≥ running
	}
}

// worker runs handed-over items until Stop closes the work channel.
func (q *Queue[T]) worker() {
	for e := range q.work {
		q.run(e)
		q.finish(e)
	}
}

// run calls the handler with the item's context and survives its panics: one
// bad turn must not take down the worker, the queue or the process.
func (q *Queue[T]) run(e *queueEntry[T]) {
	ctx, cancel := q.itemContext()
	defer cancel()
	start := time.Now()
	defer func() {
		if v := recover(); v != nil {
			q.opts.Logger.Error().
				Str("chatKey", e.item.ChatKey).
				Str("itemId", e.item.ID).
				Interface("panic", v).
				Str("stack", string(debug.Stack())).
				Msg("queue handler panicked")
			return
		}
		ev := q.opts.Logger.Debug()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			ev = q.opts.Logger.Warn() // a timed-out run is worth seeing by default
		}
		ev.Str("chatKey", e.item.ChatKey).Str("itemId", e.item.ID).
			Dur("waited", start.Sub(e.item.Enqueued)).Dur("ran", time.Since(start)).
			AnErr("ctxErr", ctx.Err()).Msg("queue item done")
	}()
	q.handler(ctx, e.item)
}

func (q *Queue[T]) itemContext() (context.Context, context.CancelFunc) {
	if q.opts.RunTimeout < 0 {
		return context.WithCancel(q.baseCtx)
	}
	return context.WithTimeout(q.baseCtx, q.opts.RunTimeout)
}

// finish releases the item's chat and worker slot and schedules what that
// frees up: the chat's next item re-enters the heap keyed by its arrival.
func (q *Queue[T]) finish(e *queueEntry[T]) {
	q.mu.Lock()
	defer q.mu.Unlock()
	lane := e.lane
	lane.running = nil
	q.running--
	delete(q.byID, e.item.ID)
	if len(lane.items) > 0 {
		heap.Push(&q.ready, lane)
	} else {
		// Forget idle chats so a long-lived process does not keep one lane
		// per chat it has ever seen.
		delete(q.lanes, lane.key)
	}
	q.dispatchLocked()
}

// Position reports where item id stands: 0 while it runs, else N ≥ 1 as in
// Ticket.Position. ok is false for an unknown or finished id. With one worker
// N is exact; with more it is an upper bound, since a later item of an idle
// chat may overtake an earlier one whose chat is busy.
func (q *Queue[T]) Position(id string) (int, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	e, ok := q.byID[id]
	if !ok {
		return 0, false
	}
	n := 0
	if !e.running {
		for el := e.elem; el != nil; el = el.Prev() {
			n++
		}
	}
	return n, true
}

// Stats returns a consistent snapshot of the queue.
func (q *Queue[T]) Stats() Stats {
	q.mu.Lock()
	defer q.mu.Unlock()
	keys := make([]string, 0, q.running)
	for key, lane := range q.lanes {
		if lane.running != nil {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	return Stats{
		Capacity:        q.opts.Capacity,
		Concurrency:     q.opts.Concurrency,
		Waiting:         q.order.Len(),
		Running:         q.running,
		RunningChatKeys: keys,
	}
}

// Stop closes intake (Enqueue then fails with ErrQueueStopped) and waits for
// the running items to end. Waiting items are not started; the caller
// collects them with Pending and persists them, so shutdown loses nothing.
// If ctx ends first, Stop cancels the running items' contexts and returns
// ctx.Err() without waiting further, since a handler that ignores its ctx
// must not hold up process exit. Calling Stop again is safe.
func (q *Queue[T]) Stop(ctx context.Context) error {
	q.mu.Lock()
	if !q.stopped {
		q.stopped = true
		close(q.stopping)
		close(q.work) // safe under mu: dispatchLocked, the only sender, checks stopped
	}
	idle := q.running == 0
	q.mu.Unlock()
	defer q.cancel()

	if idle {
		// Nothing runs, so the workers exit at once; don't let an already
		// expired ctx report a failure for a shutdown that lost nothing.
		<-q.done
		return nil
	}
	select {
	case <-q.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Pending returns the waiting items in arrival order. After Stop it is the
// backlog to persist; before Stop it is a snapshot.
func (q *Queue[T]) Pending() []Item[T] {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := make([]Item[T], 0, q.order.Len())
	for el := q.order.Front(); el != nil; el = el.Next() {
		items = append(items, el.Value.(*queueEntry[T]).item)
	}
	return items
}
