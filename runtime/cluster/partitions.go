package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/journal"
)

const partLeasePrefix = "part."

// Run takes this replica's share of the partitions and runs their items
// through take until ctx ends; then it stops reading and gives the
// partitions back once the items it took are done (or left to the next
// holder by the local queue's shutdown). Call Release after the local
// queue has stopped.
func (q *Queue) Run(ctx context.Context, take TakeFunc) {
	q.take = take
	t := time.NewTicker(leaseRetry)
	defer t.Stop()
	for {
		q.balance(ctx)
		select {
		case <-ctx.Done():
			q.stopReading()
			return
		case <-t.C:
		}
	}
}

// balance renews the partitions held, gives up those over this replica's
// share (once their items are done), and takes free ones up to it.
func (q *Queue) balance(ctx context.Context) {
	total := q.n.opts.Partitions
	// Every step is bounded: a round that waits out a leader election
	// on one request would leave the leases it holds unrenewed.
	lctx, cancel := context.WithTimeout(ctx, leaseRetry)
	live, err := q.n.liveReplicas(lctx)
	cancel()
	share := shareOf(total, live, q.n.opts.Replica)

	q.mu.Lock()
	parts := make([]*partition, 0, len(q.owned))
	for _, p := range q.owned {
		parts = append(parts, p)
	}
	q.mu.Unlock()
	lost := q.renewAll(ctx, parts)
	held := 0
	for i, p := range parts {
		if lost[i] != nil {
			q.n.log.Warn().Int("partition", p.id).Err(lost[i]).Msg("partition lease lost; another replica runs it now")
			q.drop(p, false)
			continue
		}
		if !p.lease.held() {
			// Lapsed (not renewed in time) though perhaps still this
			// replica's in the bucket: its runs are fenced by now, so it
			// is given back, and whoever takes it next (this replica,
			// maybe) reads its items again from the first one not done.
			q.n.log.Warn().Int("partition", p.id).Msg("partition lease lapsed; giving the partition back")
			q.drop(p, true)
			continue
		}
		q.mu.Lock()
		draining, idle := p.draining, p.inflight == 0
		q.mu.Unlock()
		if draining && idle {
			q.drop(p, true)
			continue
		}
		if !draining {
			held++
		}
	}
	q.mu.Lock()
	leaving := q.leaving
	q.mu.Unlock()
	if leaving {
		return // draining (Drain): renew and give back, take nothing
	}
	if err != nil {
		// Without the replica list the share is unknown: keep what is
		// held, neither giving up nor taking more.
		q.n.log.Debug().Err(err).Msg("listing replicas; partitions stay as they are")
		return
	}
	// Over the share (a replica joined): drain one partition a round, the
	// one with the least work here.
	if held > share {
		q.drainOne()
		return
	}
	if held >= share || ctx.Err() != nil {
		return
	}
	// Start at a place of our own, so replicas starting together do not
	// race for the same partitions.
	h := fnv.New32a()
	_, _ = h.Write([]byte(q.n.opts.Replica))
	start := int(h.Sum32() % uint32(total))
	// Taking free partitions waits at most a round; the rest next round.
	actx, cancel := context.WithTimeout(ctx, leaseRetry)
	defer cancel()
	for i := 0; i < total && held < share && actx.Err() == nil; i++ {
		id := (start + i) % total
		q.mu.Lock()
		_, mine := q.owned[id]
		q.mu.Unlock()
		if mine {
			continue
		}
		l, err := q.n.tryAcquire(actx, partLeasePrefix+strconv.Itoa(id))
		if err != nil || l == nil {
			continue
		}
		q.startReading(ctx, id, l)
		held++
	}
}

// renewAll renews the leases of parts that are due, all at once and each
// within leaseRenew: one after the other, eight partitions waiting out a
// leader election would take longer than a lease lives. It returns, by
// index, errLeaseLost for the leases found lost.
func (q *Queue) renewAll(ctx context.Context, parts []*partition) []error {
	lost := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		if !p.lease.due() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rctx, cancel := context.WithTimeout(ctx, leaseRenew)
			defer cancel()
			if err := p.lease.renew(rctx); errors.Is(err, errLeaseLost) {
				lost[i] = err
			}
		}()
	}
	wg.Wait()
	return lost
}

// shareOf is how many of total partitions replica self runs when the
// replicas live (sorted by name) are alive: total ÷ replicas each, and one
// more for the first total mod replicas of them. Shares then differ by at
// most one and add up to total, so no replica idles while another runs an
// extra partition (the ceiling for everyone gave 16 over 3 as 6/6/4). A
// replica not listed yet (its first heartbeat is on its way) counts itself
// in where its name sorts.
func shareOf(total int, live []string, self string) int {
	rank, found := slices.BinarySearch(live, self)
	n := len(live)
	if !found {
		n++
	}
	share := total / n
	if rank < total%n {
		share++
	}
	return share
}

// drainOne stops reading the held partition with the fewest items here;
// balance gives it back when they are done.
func (q *Queue) drainOne() {
	q.mu.Lock()
	defer q.mu.Unlock()
	var pick *partition
	for _, p := range q.owned {
		if !p.draining && (pick == nil || p.inflight < pick.inflight) {
			pick = p
		}
	}
	if pick != nil {
		pick.draining = true
		pick.stop()
		q.n.log.Info().Int("partition", pick.id).Msg("handing a partition to a replica that joined")
	}
}

// drop forgets partition p and, when it was given up on purpose, hands
// its lease back so the next holder need not wait for it to expire.
func (q *Queue) drop(p *partition, release bool) {
	p.stop()
	<-p.stopped
	q.mu.Lock()
	delete(q.owned, p.id)
	q.mu.Unlock()
	if release {
		p.lease.release()
	}
}

func (q *Queue) startReading(ctx context.Context, id int, l *lease) {
	rctx, cancel := context.WithCancel(ctx)
	p := &partition{id: id, lease: l, stop: cancel, stopped: make(chan struct{})}
	q.mu.Lock()
	q.owned[id] = p
	if q.leaving {
		// Taken just as Drain began: read nothing, give it back next round.
		p.draining = true
		cancel()
	}
	q.mu.Unlock()
	q.n.log.Info().Int("partition", id).Msg("running a queue partition")
	go func() {
		defer close(p.stopped)
		q.read(rctx, p)
	}()
}

// read hands the partition's items to the local queue, in stream order,
// from the first one not done.
func (q *Queue) read(ctx context.Context, p *partition) {
	for ctx.Err() == nil {
		err := q.readOnce(ctx, p)
		if ctx.Err() != nil {
			return
		}
		q.n.log.Warn().Err(err).Int("partition", p.id).Msg("reading a queue partition; retrying")
		select {
		case <-ctx.Done():
			return
		case <-time.After(leaseRetry):
		}
	}
}

func (q *Queue) readOnce(ctx context.Context, p *partition) error {
	cons, err := q.n.queue.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{partitionSubject(p.id)}, DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return fmt.Errorf("opening partition %d: %w", p.id, err)
	}
	msgs, err := cons.Messages(jetstream.PullMaxMessages(q.maxInflight))
	if err != nil {
		return fmt.Errorf("reading partition %d: %w", p.id, err)
	}
	defer msgs.Stop()
	go func() { <-ctx.Done(); msgs.Stop() }()
	for {
		msg, err := msgs.Next()
		if err != nil {
			return fmt.Errorf("reading partition %d: %w", p.id, err)
		}
		select { // at most maxInflight items handed over and not done
		case q.slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		q.hand(ctx, p, msg)
	}
}

// hand passes one stream message to take. A message it does not hand
// over (undecodable, or already here) gives its slot back.
func (q *Queue) hand(ctx context.Context, p *partition, msg jetstream.Msg) {
	meta, err := msg.Metadata()
	if err != nil {
		<-q.slots
		return
	}
	var it journal.Item
	if err := json.Unmarshal(msg.Data(), &it); err != nil || it.ID == "" {
		q.n.log.Error().Err(err).Uint64("seq", meta.Sequence.Stream).Msg("undecodable queue item; removing it")
		_ = q.deleteMsg(meta.Sequence.Stream)
		<-q.slots
		return
	}
	q.mu.Lock()
	if fl, here := q.items[it.ID]; here && fl.fenced {
		// Its run here was fenced when the lease lapsed and ends without
		// sending; once it has, the item is handed over afresh.
		q.mu.Unlock()
		select {
		case <-fl.gone:
		case <-ctx.Done():
			<-q.slots
			return
		}
		q.mu.Lock()
	}
	if fl, here := q.items[it.ID]; here {
		// Still running here from before the lease was lost and taken
		// back: this partition counts it now, so that it is not handed
		// to another replica (which would run it again) before it is
		// done. It holds a slot already.
		fl.part.inflight--
		fl.part = p
		p.inflight++
		q.mu.Unlock()
		<-q.slots
		return
	}
	q.mu.Unlock()
	fl := &inflight{part: p, seq: meta.Sequence.Stream, gone: make(chan struct{})}
	if err := q.readRunState(ctx, it.ID, fl); err != nil {
		// The partition stopped (lease lost, shutdown) before the state
		// could be read: the next holder reads it.
		<-q.slots
		return
	}
	it.Attempts, it.Sends, it.Streamed = fl.state.Attempts, fl.state.Sends, fl.state.Streamed
	q.mu.Lock()
	q.items[it.ID] = fl
	p.inflight++
	q.mu.Unlock()
	id := it.ID
	if err := q.take(ctx, it, func(o ingress.Outcome) { q.publishOutcome(id, o) }); err != nil {
		// Only a stopping local queue refuses: the item stays in the
		// stream for the next holder.
		q.n.log.Warn().Err(err).Str("requestId", id).Msg("item not taken; it stays queued")
		q.forget(id)
	}
}

// forget drops a handed-over item's bookkeeping and frees its slot.
func (q *Queue) forget(id string) (*inflight, bool) {
	q.mu.Lock()
	fl, ok := q.items[id]
	if ok {
		delete(q.items, id)
		fl.part.inflight--
	}
	q.mu.Unlock()
	if ok {
		<-q.slots
		close(fl.gone)
	}
	return fl, ok
}

// Drain starts this replica's leaving (a graceful shutdown): every
// partition stops reading, and while Run goes on each is given back as soon
// as the items it handed here are done, at once for those with none, so
// the other replicas take the waiting items over while the running ones
// finish here under leases that are still renewed. No partition is taken
// any more. Stop Run (and call Release) once the local queue has stopped.
func (q *Queue) Drain() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.leaving = true
	for _, p := range q.owned {
		p.draining = true
		p.stop()
	}
}

// stopReading stops every partition's reader (shutdown); items already
// handed over finish or stay in the stream.
func (q *Queue) stopReading() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, p := range q.owned {
		p.stop()
	}
}

// Release gives every partition back (shutdown, after the local queue
// stopped): items not done stay in the stream for the next holder.
func (q *Queue) Release() {
	q.mu.Lock()
	parts := make([]*partition, 0, len(q.owned))
	for _, p := range q.owned {
		parts = append(parts, p)
	}
	q.mu.Unlock()
	// Each lease is given back on its own, at once: with NATS unreachable
	// they expire by themselves, and shutdown must not wait 2 s apiece.
	var wg sync.WaitGroup
	for _, p := range parts {
		wg.Add(1)
		go func() { defer wg.Done(); q.drop(p, true) }()
	}
	wg.Wait()
}

// Partitions lists the partitions this replica runs.
func (q *Queue) Partitions() []int {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]int, 0, len(q.owned))
	for id, p := range q.owned {
		if !p.draining {
			out = append(out, id)
		}
	}
	sort.Ints(out)
	return out
}
