package cluster

import (
	"context"
	"sync"
	"testing"

	"github.com/shipmyagent/ship/runtime/journal"
)

// A draining replica (SIGTERM) hands its idle partitions to the others at
// once, so their waiting items need not wait for its running ones; the
// partition whose item still runs stays here until that item is done, and
// is handed over then, the item never running twice.
func TestADrainingReplicaHandsOverIdlePartitionsFirst(t *testing.T) {
	a := startNode(t, "a", nil)
	b := startNode(t, "b", a)
	a.opts.Partitions, b.opts.Partitions = 2, 2
	qa, qb := a.NewQueue(QueueOptions{Concurrency: 2}), b.NewQueue(QueueOptions{Concurrency: 2})
	x, y := keyIn(qa, 0), keyIn(qa, 1)
	py := qa.partitionOf(y)

	rec := newRecorder()
	runCtx, stopRun := context.WithCancel(context.Background())
	beatCtx, stopBeat := context.WithCancel(context.Background())
	defer stopRun()
	defer stopBeat()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); a.Heartbeat(beatCtx, Local{Partitions: qa.Partitions}) }()
	// a holds x-1 until the test finishes it: the running turn.
	go func() { defer wg.Done(); qa.Run(runCtx, rec.take("a", qa, func(journal.Item) bool { return false })) }()
	waitFor(t, func() bool { return len(qa.Partitions()) == 2 })
	put(t, qa, x, "x-1")
	rec.wait(t, 1)

	// a drains: it leaves the members (as cmd/ship does) and stops
	// reading; b joins.
	qa.Drain()
	stopBeat()
	bctx, stopB := context.WithCancel(context.Background())
	defer stopB()
	wg.Add(2)
	go func() { defer wg.Done(); b.Heartbeat(bctx, Local{Partitions: qb.Partitions}) }()
	go func() { defer wg.Done(); qb.Run(bctx, rec.take("b", qb, func(journal.Item) bool { return true })) }()

	// y's partition, idle on a, moves at once; x's stays while x-1 runs.
	waitFor(t, func() bool { p := qb.Partitions(); return len(p) == 1 && p[0] == py })
	put(t, qb, y, "y-1")
	waitFor(t, func() bool { return ranOn(rec, "y-1") == "b" })
	put(t, qb, x, "x-2") // waits in x's partition behind x-1
	if got := qb.Partitions(); len(got) != 1 {
		t.Errorf("b holds %v while x-1 still runs on a", got)
	}

	finish(t, qa, "x-1")
	waitFor(t, func() bool { return len(qb.Partitions()) == 2 })
	waitFor(t, func() bool { return ranOn(rec, "x-2") == "b" })
	qa.mu.Lock()
	held := len(qa.owned)
	qa.mu.Unlock()
	if held != 0 {
		t.Errorf("the drained replica still holds %d partitions (or took one again)", held)
	}
	stopRun()
	stopB()
	wg.Wait()
	if got := ranOn(rec, "x-1"); got != "a" {
		t.Errorf("x-1 ran on %q, want only on a", got)
	}
}
