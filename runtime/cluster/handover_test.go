package cluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/journal"
	"github.com/shipmyagent/ship/runtime/turn"
)

// A replica whose partition lease lapsed while items of it were still
// running, and which took the partition back, must count those items as
// that partition's work: a joining replica is handed the partition with the
// least work, and must not get one whose items still run here (it would run
// them a second time). The partition once counted them as none.
func TestARetakenPartitionKeepsItsRunningItemsWhenAReplicaJoins(t *testing.T) {
	a := startNode(t, "a", nil)
	b := startNode(t, "b", a)
	a.opts.Partitions, b.opts.Partitions = 2, 2
	qa, qb := a.NewQueue(QueueOptions{Concurrency: 2}), b.NewQueue(QueueOptions{Concurrency: 2})
	x, y := keyIn(qa, 0), keyIn(qa, 1)
	px, py := qa.partitionOf(x), qa.partitionOf(y)

	rec := newRecorder()
	actx, stopA := context.WithCancel(context.Background())
	defer stopA()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); a.Heartbeat(actx, Local{Partitions: qa.Partitions}) }()
	// Replica a holds on to everything it takes until the test says.
	go func() { defer wg.Done(); qa.Run(actx, rec.take("a", qa, func(journal.Item) bool { return false })) }()
	waitFor(t, func() bool { return len(qa.Partitions()) == 2 })

	// x's partition runs two items here, y's one.
	put(t, qa, x, "x-1")
	put(t, qa, x, "x-2")
	put(t, qa, y, "y-1")
	rec.wait(t, 3)

	// x's lease lapses (as after a NATS outage longer than its TTL); a
	// notices, takes the partition back and reads x-1 and x-2 again,
	// still running here.
	qa.mu.Lock()
	before := qa.owned[px]
	qa.mu.Unlock()
	if err := a.leases.Delete(context.Background(), partLeasePrefix+strconv.Itoa(px)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		qa.mu.Lock()
		defer qa.mu.Unlock()
		p := qa.owned[px]
		return p != nil && p != before && p.inflight == 2
	})

	// b joins: a hands over y's partition, the one with less work, once
	// y-1 is done; x's stays with a.
	bctx, stopB := context.WithCancel(context.Background())
	defer stopB()
	wg.Add(2)
	go func() { defer wg.Done(); b.Heartbeat(bctx, Local{Partitions: qb.Partitions}) }()
	go func() { defer wg.Done(); qb.Run(bctx, rec.take("b", qb, func(journal.Item) bool { return true })) }()
	waitFor(t, func() bool { p := qa.Partitions(); return len(p) == 1 && p[0] == px })
	finish(t, qa, "y-1")
	waitFor(t, func() bool { p := qb.Partitions(); return len(p) == 1 && p[0] == py })

	finish(t, qa, "x-1")
	finish(t, qa, "x-2")
	put(t, qa, y, "y-2") // runs on b, after y's partition moved
	waitFor(t, func() bool { return ranOn(rec, "y-2") == "b" })
	stopA()
	stopB()
	wg.Wait()
	for _, id := range []string{"x-1", "x-2", "y-1"} {
		if got := ranOn(rec, id); got != "a" {
			t.Errorf("%s ran on %s, want only on a", id, got)
		}
	}
}

// finish ends an item's run on q as the engine does.
func finish(t *testing.T, q *Queue, id string) {
	t.Helper()
	if err := q.Start(id); err != nil {
		t.Fatal(err)
	}
	if err := q.Done(id); err != nil {
		t.Fatal(err)
	}
}

// ranOn names the replicas that took item id ("" for none).
func ranOn(rec *recorder, id string) string {
	var on []string
	for _, tk := range rec.snapshot() {
		if tk.it.ID == id {
			on = append(on, tk.replica)
		}
	}
	return strings.Join(on, ",")
}

// keyIn finds a chat key of partition p.
func keyIn(q *Queue, p int) string {
	for i := 0; ; i++ {
		if key := fmt.Sprintf("api:chat:k%d", i); q.partitionOf(key) == p {
			return key
		}
	}
}

func put(t *testing.T, q *Queue, key, id string) {
	t.Helper()
	_, err := q.Submit(context.Background(), journal.Item{Turn: turn.Turn{ID: id, ChatKey: key, Route: dispatch.RequestContext{Channel: "api", ChatKey: key, MessageID: id}, Text: id}}, nil)
	if err != nil {
		t.Fatal(err)
	}
}
