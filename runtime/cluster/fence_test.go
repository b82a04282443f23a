package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/journal"
)

// wake makes a paused replica's lease look freshly renewed to itself, as
// after a pause that ended between its last check and a write: only the
// run state's fence can stop it then.
func wake(q *Queue, id string) {
	q.mu.Lock()
	l := q.items[id].part.lease
	q.mu.Unlock()
	l.mu.Lock()
	l.lastOK, l.lost = time.Now(), false
	l.mu.Unlock()
}

// A replica paused mid-turn past its lease (SIGSTOP, a long GC) wakes up
// not owning its runs: the replica that took the partition over runs
// them, and the woken one's send intents are refused, whether it notices
// its lapsed lease itself or only the run state's fence tells it. A send
// intent it recorded before the new holder started the run makes that run
// stand down (in doubt) rather than answer a second time.
func TestAPausedReplicaSendsNothingForMessagesAnotherRunsNow(t *testing.T) {
	a := startNode(t, "a", nil)
	b := startNode(t, "b", a)
	qa := a.NewQueue(QueueOptions{Concurrency: 4})
	started := make(chan string, 10)
	actx, pause := context.WithCancel(context.Background())
	var arun sync.WaitGroup
	arun.Add(1)
	go func() {
		defer arun.Done()
		qa.Run(actx, func(_ context.Context, it journal.Item, _ func(ingress.Outcome)) error {
			if err := qa.Start(it.ID); err != nil {
				t.Errorf("a starting %s: %v", it.ID, err)
			}
			started <- it.ID
			return nil // mid-turn: it never finishes before the pause
		})
	}()
	waitFor(t, func() bool { return len(qa.Partitions()) == 4 })
	submit(t, qa, 3, 1)
	for range 3 {
		select {
		case <-started:
		case <-time.After(60 * time.Second):
			t.Fatal("a did not start its runs")
		}
	}
	pause() // no renewals from here on, no release: a is "stopped"
	arun.Wait()

	// c0: a wakes after b took over, sees its lease lapsed, sends nothing.
	// c1: a wakes believing its lease fresh, after b started the run.
	// c2: a wakes believing its lease fresh and records a send intent
	// before b starts the run: b must not answer too.
	var mu sync.Mutex
	bStart := map[string]error{}
	aSend := map[string]error{}
	done := make(chan struct{}, 10)
	qb := b.NewQueue(QueueOptions{Concurrency: 4})
	bctx, stop := context.WithCancel(context.Background())
	defer stop()
	var brun sync.WaitGroup
	brun.Add(1)
	go func() {
		defer brun.Done()
		qb.Run(bctx, func(_ context.Context, it journal.Item, _ func(ingress.Outcome)) error {
			go func() {
				defer func() { done <- struct{}{} }()
				id := it.ID
				if strings.HasPrefix(id, "c2-") {
					wake(qa, id)
					err := qa.Sending(id)
					mu.Lock()
					aSend[id] = err
					mu.Unlock()
				}
				err := qb.Start(id)
				mu.Lock()
				bStart[id] = err
				mu.Unlock()
				switch {
				case strings.HasPrefix(id, "c0-"):
					err = qa.Sending(id)
				case strings.HasPrefix(id, "c1-"):
					wake(qa, id)
					err = qa.Sending(id)
				}
				if !strings.HasPrefix(id, "c2-") {
					mu.Lock()
					aSend[id] = err
					mu.Unlock()
				}
				if bStart[id] == nil {
					if err := qb.Sending(id); err != nil {
						t.Errorf("b sending %s: %v", id, err)
					}
				}
				if err := qb.Done(id); err != nil {
					t.Errorf("b done %s: %v", id, err)
				}
			}()
			return nil
		})
	}()
	for range 3 {
		select {
		case <-done:
		case <-time.After(90 * time.Second):
			t.Fatal("b did not take a's runs over")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range []string{"c0-m0", "c1-m0"} {
		if bStart[id] != nil {
			t.Errorf("b could not start %s: %v", id, bStart[id])
		}
		if !errors.Is(aSend[id], journal.ErrFenced) {
			t.Errorf("the woken replica's send intent for %s: %v, want it fenced", id, aSend[id])
		}
	}
	if aSend["c2-m0"] != nil {
		t.Errorf("a's send intent for c2, recorded before b started: %v", aSend["c2-m0"])
	}
	if !errors.Is(bStart["c2-m0"], journal.ErrInDoubt) {
		t.Errorf("b starting c2 after a recorded a send intent: %v, want in doubt", bStart["c2-m0"])
	}
	// A fenced run ends on a without touching the queue: Done only forgets.
	for _, id := range []string{"c0-m0", "c1-m0"} {
		if err := qa.Done(id); err != nil {
			t.Errorf("a done %s: %v", id, err)
		}
	}
}

// A field a newer version writes into the run state survives this
// version's rewrite of it (rolling upgrades run both side by side).
func TestRunStateKeepsFieldsOfANewerVersion(t *testing.T) {
	var s runState
	if err := json.Unmarshal([]byte(`{"v":2,"attempts":1,"sends":0,"lease":7,"priority":"high","trace":{"id":"x"}}`), &s); err != nil {
		t.Fatal(err)
	}
	s.Sends++
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back["priority"] != "high" || back["trace"] == nil || back["sends"] != float64(1) || back["attempts"] != float64(1) {
		t.Fatalf("rewritten run state %s lost a field", b)
	}
}

// An item queued by a newer version, with a field this one does not know,
// is run all the same; the version travels with it.
func TestAnItemFromANewerVersionIsRun(t *testing.T) {
	a := startNode(t, "a", nil)
	q := a.NewQueue(QueueOptions{Concurrency: 1})
	rec := newRecorder()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		q.Run(ctx, rec.take("a", q, func(journal.Item) bool { return true }))
	}()
	defer wg.Wait()
	key := "api:chat:newer"
	raw := `{"v":2,"id":"n1","chatKey":"` + key + `","request":{"channel":"api","chatKey":"` + key + `","messageId":"n1"},"text":"from v2","priority":"high"}`
	if _, err := a.js.Publish(ctx, partitionSubject(q.partitionOf(key)), []byte(raw)); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, 1)
	got := rec.snapshot()[0].it
	if got.ID != "n1" || got.Text != "from v2" || got.Route.MessageID != "n1" {
		t.Fatalf("item from a newer version taken as %+v", got)
	}
	cancel()
}

// BenchmarkRunStateReads: what issue 28 added to a turn's path on one
// embedded server: the leader read of a run's state at hand-over (against
// the direct get it replaced), and the door's look at the queue's room.
func BenchmarkRunStateReads(b *testing.B) {
	n := startNode(b, "a", nil)
	q := n.NewQueue(QueueOptions{Capacity: 1000})
	ctx := context.Background()
	if _, err := n.runs.Put(ctx, token("bench"), []byte(`{"v":1,"attempts":1}`)); err != nil {
		b.Fatal(err)
	}
	b.Run("leaderGet", func(b *testing.B) {
		for b.Loop() {
			if _, err := n.leaderGet(ctx, bucketRuns, token("bench")); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("directGet", func(b *testing.B) {
		for b.Loop() {
			if _, err := n.runs.Get(ctx, token("bench")); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Admits", func(b *testing.B) {
		for b.Loop() {
			if err := q.Admits(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}
