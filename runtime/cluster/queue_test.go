package cluster

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/journal"
	"github.com/shipmyagent/ship/runtime/turn"
)

// startNode starts a replica: the first one runs the embedded server, the
// others connect to it.
func startNode(t testing.TB, name string, first *Node) *Node {
	t.Helper()
	opts := Options{Replica: name, Partitions: 4, Logger: zerolog.Nop()}
	if first == nil {
		opts.Embedded = &Embedded{Listen: "127.0.0.1:-1", StoreDir: t.TempDir()}
	} else {
		opts.URL = first.ClientURL()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	return n
}

// taken is what one replica's take saw.
type taken struct {
	replica string
	it      journal.Item
}

type recorder struct {
	mu   sync.Mutex
	seen []taken
	c    chan struct{}
}

func newRecorder() *recorder { return &recorder{c: make(chan struct{}, 1000)} }

// take records the item; finish says whether the run ends (Done) or the
// replica "dies" holding it.
func (r *recorder) take(name string, q *Queue, finish func(journal.Item) bool) TakeFunc {
	return func(_ context.Context, it journal.Item, _ func(ingress.Outcome)) error {
		r.mu.Lock()
		r.seen = append(r.seen, taken{name, it})
		r.mu.Unlock()
		r.c <- struct{}{}
		if finish(it) {
			go func() {
				_ = q.Start(it.ID)
				_ = q.Done(it.ID)
			}()
		}
		return nil
	}
}

func (r *recorder) wait(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for range n {
		select {
		case <-r.c:
		case <-deadline:
			t.Fatalf("only %d items taken, want %d", len(r.snapshot()), n)
		}
	}
}

func (r *recorder) snapshot() []taken {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]taken(nil), r.seen...)
}

func submit(t *testing.T, q *Queue, chats, perChat int) {
	t.Helper()
	for i := range perChat {
		for c := range chats {
			key := fmt.Sprintf("api:chat:c%d", c)
			_, err := q.Submit(context.Background(), journal.Item{Turn: turn.Turn{ID: fmt.Sprintf("c%d-m%d", c, i), ChatKey: key, Route: dispatch.RequestContext{Channel: "api", ChatKey: key, MessageID: fmt.Sprintf("c%d-m%d", c, i)}, Text: fmt.Sprintf("m%d", i)}}, nil)
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestItemsRunOnceInOrderSpreadOverReplicas(t *testing.T) {
	a := startNode(t, "a", nil)
	b := startNode(t, "b", a)
	rec := newRecorder()
	qa, qb := a.NewQueue(QueueOptions{Concurrency: 2}), b.NewQueue(QueueOptions{Concurrency: 2})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	always := func(journal.Item) bool { return true }
	var wg sync.WaitGroup
	for _, x := range []struct {
		n *Node
		q *Queue
	}{{a, qa}, {b, qb}} {
		wg.Add(2)
		go func() { defer wg.Done(); x.n.Heartbeat(ctx, Local{Partitions: x.q.Partitions}) }()
		go func() { defer wg.Done(); x.q.Run(ctx, rec.take(x.n.Replica(), x.q, always)) }()
	}
	// Both replicas hold partitions before work arrives, so it spreads.
	waitFor(t, func() bool { return len(qa.Partitions()) == 2 && len(qb.Partitions()) == 2 })
	submit(t, qa, 12, 5)
	rec.wait(t, 60)
	cancel()
	wg.Wait()

	byChat := map[string][]string{}
	replicas := map[string]bool{}
	ids := map[string]int{}
	for _, tk := range rec.snapshot() {
		byChat[tk.it.ChatKey] = append(byChat[tk.it.ChatKey], tk.it.Text)
		replicas[tk.replica] = true
		ids[tk.it.ID]++
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("item %s taken %d times", id, n)
		}
	}
	for key, texts := range byChat {
		for i, text := range texts {
			if text != fmt.Sprintf("m%d", i) {
				t.Errorf("chat %s ran %v, not in order", key, texts)
				break
			}
		}
	}
	if len(replicas) != 2 {
		t.Errorf("items ran on %v; want both replicas", replicas)
	}
}

func TestDeadReplicasItemsGoToAnotherWithTheirSendIntents(t *testing.T) {
	a := startNode(t, "a", nil)
	b := startNode(t, "b", a)
	rec := newRecorder()
	// Read-ahead for all six items (4 × 2): a takes every chat's head
	// whatever order its partitions are read in.
	qa := a.NewQueue(QueueOptions{Concurrency: 2})
	actx, kill := context.WithCancel(context.Background())
	defer kill()
	// Replica a finishes nothing: it records a send intent for the first
	// message of each chat, then "dies" with everything it took.
	heads := make(chan error, 3)
	var adone sync.WaitGroup
	adone.Add(1)
	go func() {
		defer adone.Done()
		qa.Run(actx, rec.take("a", qa, func(it journal.Item) bool {
			if it.Text == "m0" {
				err := qa.Start(it.ID)
				if err == nil {
					err = qa.Sending(it.ID)
				}
				heads <- err
			}
			return false
		}))
	}()
	waitFor(t, func() bool { return len(qa.Partitions()) == 4 })
	submit(t, qa, 3, 2)
	for range 3 { // every chat's head started, its send intent stored
		select {
		case err := <-heads:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("a did not record the send intents of the chats' heads")
		}
	}
	kill() // no release: its leases must expire
	adone.Wait()

	qb := b.NewQueue(QueueOptions{Concurrency: 1})
	bctx, stop := context.WithCancel(context.Background())
	defer stop()
	var bdone sync.WaitGroup
	bdone.Add(1)
	go func() { defer bdone.Done(); qb.Run(bctx, rec.take("b", qb, func(journal.Item) bool { return true })) }()
	waitFor(t, func() bool {
		n := 0
		for _, tk := range rec.snapshot() {
			if tk.replica == "b" {
				n++
			}
		}
		return n == 6
	})
	stop()
	bdone.Wait()
	for _, tk := range rec.snapshot() {
		if tk.replica != "b" {
			continue
		}
		wantSends := 0
		if tk.it.Text == "m0" {
			wantSends = 1
		}
		if tk.it.Sends != wantSends || (wantSends == 1 && tk.it.Attempts != 1) {
			t.Errorf("b got %s with attempts %d sends %d; want the send intent a recorded (%d)", tk.it.ID, tk.it.Attempts, tk.it.Sends, wantSends)
		}
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 60 s")
		}
		<-tick.C
	}
}
