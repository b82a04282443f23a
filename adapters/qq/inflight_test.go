package qq_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/cluster"
	"github.com/shipmyagent/ship/runtime/engine"
)

// twoReplicas starts the cluster state of two ship replicas on one
// embedded NATS server: "other" (alive, heartbeating) and "here".
func twoReplicas(t *testing.T) (other, here *cluster.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	other, err := cluster.Start(ctx, cluster.Options{Replica: "other", Logger: zerolog.Nop(),
		Embedded: &cluster.Embedded{Listen: "127.0.0.1:-1", StoreDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	here, err = cluster.Start(ctx, cluster.Options{Replica: "here", URL: other.ClientURL(), Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(here.Close)
	hctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	go other.Heartbeat(hctx, cluster.Local{})
	return other, here
}

// A gateway event whose message another replica (the gateway's last
// holder) claimed and has not settled is not dropped as a duplicate: QQ
// will not send a gateway event again, so the adapter asks again until
// the claim is given back, and then answers it once.
func TestAMessageAnotherReplicaIsTakingIsAnsweredOnceItLetsGo(t *testing.T) {
	other, here := twoReplicas(t)
	e := newEnv(t, setup{noStart: true, engine: func(o *engine.Options) { o.Claims = here.Claims() }})
	e.start()
	if err := e.qq.WaitConnected(e.ctx(), 1); err != nil {
		t.Fatal(err)
	}

	ev := e.qq.C2C("U1", "taken elsewhere first")
	key := "qq:c2c:U1\x00" + ev.MessageID
	if ok, err := other.Claims().Claim(e.ctx(), key); err != nil || !ok {
		t.Fatalf("the other replica's claim: %v %v", ok, err)
	}
	e.qq.Push(ev)
	// It is not answered while the other replica holds the claim...
	e.until("the adapter finding the message in flight elsewhere", func() bool {
		return strings.Contains(e.logs.String(), "being taken by another replica")
	})
	if n := len(e.qq.Sent()); n != 0 {
		t.Fatalf("answered %d times while another replica held the claim", n)
	}
	// ...and is once that replica gives it back (it could not queue it).
	other.Claims().Drop(e.ctx(), key)
	if s := e.waitSent(1)[0]; s.Content != "echo: taken elsewhere first" || s.MsgID != ev.MessageID {
		t.Fatalf("sent %+v", s)
	}
}
