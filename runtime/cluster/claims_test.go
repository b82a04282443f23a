package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/ingress"
)

func TestAMessageIsClaimedByOneReplicaAndADeadClaimIsTakenOver(t *testing.T) {
	a, b, stop := twoReplicas(t)
	ctx := context.Background()

	ca, cb := a.Claims(), b.Claims()
	if ok, err := ca.Claim(ctx, "telegram:chat:1\x0010"); err != nil || !ok {
		t.Fatalf("first claim: %v %v", ok, err)
	}
	// In flight on a: the platform must deliver it again later, not
	// have it confirmed as a duplicate (a may still fail to queue it).
	if ok, err := cb.Claim(ctx, "telegram:chat:1\x0010"); ok || !errors.Is(err, ingress.ErrInFlight) {
		t.Fatalf("b's claim of a message a is taking = %v, %v; want ErrInFlight", ok, err)
	}
	ca.Taken(ctx, "telegram:chat:1\x0010")
	if ok, err := cb.Claim(ctx, "telegram:chat:1\x0010"); ok || err != nil {
		t.Fatalf("b's claim of a message a took = %v, %v; want false (a duplicate)", ok, err)
	}

	// a claims another message and dies before queueing it: b takes over.
	if ok, _ := ca.Claim(ctx, "telegram:chat:1\x0011"); !ok {
		t.Fatal("a could not claim")
	}
	stop() // the heartbeat leaves: a is gone
	waitFor(t, func() bool { ok, _ := a.alive(ctx, "a", a.boot); return !ok })
	if ok, err := cb.Claim(ctx, "telegram:chat:1\x0011"); err != nil || !ok {
		t.Fatalf("b did not take over the dead replica's claim: %v %v", ok, err)
	}
	// A dropped claim is free again.
	cb.Drop(ctx, "telegram:chat:1\x0011")
	if ok, _ := ca.Claim(ctx, "telegram:chat:1\x0011"); !ok {
		t.Fatal("a dropped claim was not free")
	}
}

func TestOneReplicaHoldsAConnectionAndAnotherTakesOver(t *testing.T) {
	a := startNode(t, "a", nil)
	b := startNode(t, "b", a)
	var holding atomic.Int32
	held := make(chan string, 2)
	run := func(name string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			if holding.Add(1) != 1 {
				t.Errorf("%s holds the connection while another does", name)
			}
			held <- name
			<-ctx.Done()
			holding.Add(-1)
			return nil
		}
	}
	actx, stopA := context.WithCancel(context.Background())
	bctx, stopB := context.WithCancel(context.Background())
	defer stopB()
	doneA := make(chan struct{})
	go func() { _ = a.Hold(actx, "telegram", run("a")); close(doneA) }()
	if first := <-held; first != "a" {
		t.Fatalf("%s holds first", first)
	}
	go func() { _ = b.Hold(bctx, "telegram", run("b")) }()
	stopA() // a stops and gives the lease back
	<-doneA
	if next := <-held; next != "b" {
		t.Fatalf("%s took over, want b", next)
	}
	hs, err := b.holders(context.Background(), connLeasePrefix)
	if err != nil || len(hs) != 1 || hs[0].Holder != "b" || hs[0].Name != "telegram" {
		t.Fatalf("holders = %+v, %v", hs, err)
	}
}

// A claim its live replica never settled (NATS was unreachable when it
// tried to give it back) must not hide the message for the claims' 24 h:
// past staleClaim another replica takes it.
func TestAClaimLeftOpenTooLongIsTakenOver(t *testing.T) {
	a, b, _ := twoReplicas(t)
	ctx := context.Background()

	key := "telegram:chat:1\x0012"
	old, _ := json.Marshal(claimValue{Replica: "a", Boot: a.boot, At: time.Now().Add(-staleClaim - time.Second).UnixMilli()})
	if _, err := a.claims.Put(ctx, claimKey(key), old); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.Claims().Claim(ctx, key); err != nil || !ok {
		t.Fatalf("b did not take over a claim left open by a live replica: %v %v", ok, err)
	}
	fresh := "telegram:chat:1\x0013"
	if ok, _ := a.Claims().Claim(ctx, fresh); !ok {
		t.Fatal("a could not claim")
	}
	if ok, err := b.Claims().Claim(ctx, fresh); ok || !errors.Is(err, ingress.ErrInFlight) {
		t.Fatalf("b's claim of a message a had just claimed = %v, %v; want ErrInFlight", ok, err)
	}
}

// An adapter that loses its connection's lease while a message is half
// taken (claimed, not yet logged) gives the claim back even though its
// context has ended, so the next holder, fetching the message again, takes
// it instead of dropping it as a copy in flight.
func TestAMessageRefusedByAStoppedCallerIsFreeForTheNextHolder(t *testing.T) {
	a, b, _ := twoReplicas(t) // a stays alive: its claim would stand
	ctx := context.Background()

	store, err := chat.OpenStore(chat.StoreOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	in := ingress.New(ingress.Options{Store: store, Shared: a.NewQueue(QueueOptions{Concurrency: 1}), Claims: a.Claims(), Logger: zerolog.Nop()})
	cctx, lost := context.WithCancel(ctx)
	msg := ingress.Submission{Channel: "telegram", ChatKey: "telegram:chat:7", Once: true,
		Message: ingress.IncomingChatMessage{ChatID: "7", MessageID: "99", UserID: "7", Text: "hello"},
		// The lease goes while the message is being taken.
		Prepare: func(context.Context, string) ingress.Prepared { lost(); return ingress.Prepared{Text: "hello"} },
	}
	if _, err := in.Submit(cctx, msg); err == nil {
		t.Fatal("Submit succeeded with its context cancelled before logging")
	}
	if ok, err := b.Claims().Claim(ctx, "telegram:chat:7\x0099"); err != nil || !ok {
		t.Fatalf("the next holder could not take the message (%v, %v): it would be dropped as a duplicate", ok, err)
	}
}

// twoReplicas starts replicas a and b, a with its heartbeat on (alive)
// until stopA is called or the test ends.
func twoReplicas(t *testing.T) (a, b *Node, stopA func()) {
	t.Helper()
	a = startNode(t, "a", nil)
	b = startNode(t, "b", a)
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	go a.Heartbeat(ctx, Local{})
	waitFor(t, func() bool { ok, _ := a.alive(context.Background(), "a", a.boot); return ok })
	return a, b, stop
}
