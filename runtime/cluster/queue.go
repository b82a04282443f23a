package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/journal"
	"github.com/shipmyagent/ship/runtime/queue"
)

// TakeFunc runs, on this replica, an item the shared queue handed it
// (engine.Engine.Take).
type TakeFunc func(ctx context.Context, it journal.Item, onDone func(ingress.Outcome)) error

// Queue is the global queue in cluster mode: one stream, its subjects one
// per partition, a chat always in the same partition. A partition is run
// by the replica holding its lease, which reads it in order with an
// ordered consumer and hands the items to its local queue (one at a time
// per chat, in order); an item leaves the stream only when its run is
// done. A replica that dies leaves its items in the stream, and the next
// holder of the partition reads them again, from the first one not done.
//
// Queue is also the run state of journal.Recorder: attempts, send intents
// and streamed messages of each run, kept in a KV bucket, so the rule
// "never answer twice" holds across replicas.
type Queue struct {
	n           *Node
	take        TakeFunc
	capacity    int
	maxInflight int
	slots       chan struct{} // one per item handed to the local queue

	mu    sync.Mutex
	owned map[int]*partition
	items map[string]*inflight // by item id
	// leaving is set by Drain: no partition is taken any more, and each
	// held one is given back once its items here are done.
	leaving bool
}

type partition struct {
	id       int
	lease    *lease
	stop     context.CancelFunc
	stopped  chan struct{} // closed when its reader has returned
	inflight int
	draining bool
}

// inflight is an item handed to this replica's local queue.
type inflight struct {
	// part is the partition that counts it: the one that handed it over,
	// or the one that took the partition back while it still ran here.
	part  *partition
	seq   uint64
	state runState
	// rev is the revision of the run state record as this replica last
	// read or wrote it (0: there is none): every write names it, so a
	// write after another replica's is refused (runstate.go).
	rev uint64
	// fenced says the run is another replica's now: nothing more is
	// written or sent for it here, and Done only forgets it.
	fenced bool
	// gone is closed when the item is forgotten here.
	gone chan struct{}
}

// QueueOptions configure the shared queue.
type QueueOptions struct {
	// Capacity is how many items may wait cluster-wide (queue.capacity);
	// more are refused with queue.ErrQueueFull.
	Capacity int
	// Concurrency is this replica's number of workers; it reads ahead
	// four times as many items.
	Concurrency int
}

// NewQueue returns the shared queue; Run starts taking partitions.
func (n *Node) NewQueue(opts QueueOptions) *Queue {
	if opts.Capacity <= 0 {
		opts.Capacity = 1000
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 1
	}
	q := &Queue{n: n, capacity: opts.Capacity, maxInflight: 4 * opts.Concurrency, owned: map[int]*partition{}, items: map[string]*inflight{}}
	q.slots = make(chan struct{}, q.maxInflight)
	return q
}

// Admits implements ingress.Room: it says "busy" (a *queue.QueueFullError)
// when the stream already holds queue.capacity items, before the message
// is logged, as one process does. It asks the stream (one request, about
// as much as the publish that follows); JetStream's own limit refuses what
// another replica's message slips in between.
func (q *Queue) Admits(ctx context.Context) error {
	// Briefly: while the stream elects a leader nobody answers, and the
	// platform's intake (a Telegram poll) must not wait on a look that
	// the publish after it makes anyway.
	ctx, cancel := context.WithTimeout(ctx, admitBudget)
	defer cancel()
	info, err := q.n.queue.Info(ctx)
	if err != nil {
		return nil // the publish that follows finds out for itself
	}
	if held := int(info.State.Msgs); held >= q.capacity {
		return &queue.QueueFullError{Capacity: q.capacity, Waiting: held}
	}
	return nil
}

// admitBudget bounds Admits' look at the stream.
const admitBudget = 250 * time.Millisecond

// LocalCapacity is what the local queue must hold so it never refuses an
// item this queue hands it.
func (q *Queue) LocalCapacity() int { return q.maxInflight + 1 }

// partitionOf hashes a chat into a partition.
func (q *Queue) partitionOf(chatKey string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(chatKey))
	return int(h.Sum32() % uint32(q.n.opts.Partitions))
}

func partitionSubject(p int) string { return queueSubject + "." + strconv.Itoa(p) }

// token makes an id safe as one subject token or KV key.
func token(id string) string { return base64.RawURLEncoding.EncodeToString([]byte(id)) }

// Submit implements ingress.Shared: the item is in the stream when it
// returns. A platform message re-submitted by another replica (its first
// taker died before marking it taken) is deduplicated by the stream.
func (q *Queue) Submit(ctx context.Context, it journal.Item, onDone func(ingress.Outcome)) (queue.Ticket, error) {
	it.Accepted = time.Now().UnixMilli()
	b, err := json.Marshal(itemWire{V: wireVersion, Item: it})
	if err != nil {
		return queue.Ticket{}, fmt.Errorf("encoding queue item: %w", err)
	}
	var sub *nats.Subscription
	if onDone != nil {
		if sub, err = q.awaitOutcome(it.ID, onDone); err != nil {
			return queue.Ticket{}, err
		}
	}
	msgID := it.ID
	if it.Route.MessageID != "" {
		sum := sha256.Sum256([]byte(it.ChatKey + "\x00" + it.Route.MessageID))
		msgID = "m:" + hex.EncodeToString(sum[:16])
	}
	// The message id makes a retry (or a second replica's submit of the
	// same platform message) a no-op within the stream's dedupe window.
	err = retryHot(ctx, q.n, "queueing in JetStream", func(ctx context.Context) error {
		_, err := q.n.js.Publish(ctx, partitionSubject(q.partitionOf(it.ChatKey)), b, jetstream.WithMsgID(msgID))
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && strings.Contains(apiErr.Description, "maximum messages") {
			return permanent{&queue.QueueFullError{Capacity: q.capacity, Waiting: q.capacity}}
		}
		return err
	})
	if err != nil {
		if sub != nil {
			_ = sub.Unsubscribe() // nothing will run: nobody waits
		}
		if errors.Is(err, queue.ErrQueueFull) {
			return queue.Ticket{}, err
		}
		return queue.Ticket{}, fmt.Errorf("queueing in JetStream: %w", err)
	}
	return queue.Ticket{ID: it.ID}, nil
}

// itemWire is a queue item in the stream: the journal's item and the
// version of the replica that queued it. An item is never rewritten, so a
// field only a newer version knows stays in the stream with it.
type itemWire struct {
	V int `json:"v"`
	journal.Item
}

// outcomeWire is an Outcome on its way to the replica that waits for it.
type outcomeWire struct {
	V            int             `json:"v"`
	Result       json.RawMessage `json:"result"`
	Err          string          `json:"err,omitempty"`
	FallbackSent bool            `json:"fallbackSent,omitempty"`
	// Delivered is Result.Delivered, which Result's JSON leaves out: the
	// waiting replica learns the run delivered (its replies are in Result).
	Delivered bool `json:"delivered,omitempty"`
}

// awaitOutcome subscribes to the outcome of run id before it is queued,
// so it cannot be missed.
func (q *Queue) awaitOutcome(id string, onDone func(ingress.Outcome)) (*nats.Subscription, error) {
	var once sync.Once
	var sub *nats.Subscription
	sub, err := q.n.nc.Subscribe(outcomeSubj+"."+token(id), func(m *nats.Msg) {
		once.Do(func() {
			_ = sub.Unsubscribe()
			var w outcomeWire
			var o ingress.Outcome
			if err := json.Unmarshal(m.Data, &w); err == nil {
				_ = json.Unmarshal(w.Result, &o.Result)
				o.Result.Delivered = w.Delivered
				if w.Err != "" {
					o.Err = errors.New(w.Err)
				}
				o.FallbackSent = w.FallbackSent
			} else {
				o.Err = fmt.Errorf("decoding a run's outcome: %w", err)
			}
			onDone(o)
		})
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for a run's outcome: %w", err)
	}
	return sub, nil
}

// publishOutcome tells whoever waits for run id how it ended. A run not
// started because this replica stops is not an outcome: the item stays in
// the stream and another replica runs it.
func (q *Queue) publishOutcome(id string, o ingress.Outcome) {
	if errors.Is(o.Err, queue.ErrQueueStopped) || journal.NotOurs(o.Err) {
		// Not this replica's to tell: the replica that runs (or ran) the
		// item publishes its outcome.
		return
	}
	res, _ := json.Marshal(o.Result)
	w := outcomeWire{V: wireVersion, Result: res, FallbackSent: o.FallbackSent, Delivered: o.Result.Delivered}
	if o.Err != nil {
		w.Err = o.Err.Error()
	}
	b, _ := json.Marshal(w)
	if err := q.n.nc.Publish(outcomeSubj+"."+token(id), b); err != nil {
		q.n.log.Warn().Err(err).Str("requestId", id).Msg("sending a run's outcome")
	}
}
