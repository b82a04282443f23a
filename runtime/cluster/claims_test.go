package cluster

import (
	"context"
	"sync/atomic"
	"testing"
)

func TestAMessageIsClaimedByOneReplicaAndADeadClaimIsTakenOver(t *testing.T) {
	a := startNode(t, "a", nil)
	b := startNode(t, "b", a)
	ctx := context.Background()
	hctx, stop := context.WithCancel(ctx)
	defer stop()
	go a.Heartbeat(hctx, Local{})
	waitFor(t, func() bool { ok, _ := a.alive(ctx, "a", a.boot); return ok })

	ca, cb := a.Claims(), b.Claims()
	if ok, err := ca.Claim(ctx, "telegram:chat:1\x0010"); err != nil || !ok {
		t.Fatalf("first claim: %v %v", ok, err)
	}
	if ok, _ := cb.Claim(ctx, "telegram:chat:1\x0010"); ok {
		t.Fatal("b claimed a message a is taking")
	}
	ca.Taken(ctx, "telegram:chat:1\x0010")
	if ok, _ := cb.Claim(ctx, "telegram:chat:1\x0010"); ok {
		t.Fatal("b claimed a message a took")
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
