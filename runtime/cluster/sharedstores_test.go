package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/contacts"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/policy"
)

// An approval asked by a run on one replica is answered on another (the
// one that holds the platform's connection), and its grant lets the call
// run once, wherever the run is: the stores are one state over ship_state.
func TestApprovalsAreOneStateAcrossReplicas(t *testing.T) {
	a := startNode(t, "a", nil)
	b := startNode(t, "b", a)
	sa := policy.OpenShared(a.Table("approvals"), policy.Options{GrantMaxUses: 2})
	sb := policy.OpenShared(b.Table("approvals"), policy.Options{GrantMaxUses: 2})
	const chatKey = "telegram:chat:-1001"
	req := policy.ApprovalRequest{ChatKey: chatKey, Identity: "telegram:2", Tool: "exec_shell", Arg: "git push",
		ArgsJSON: json.RawMessage(`{"command":"git push"}`)}
	admin := policy.Approver{Identity: "telegram:1", ChatKey: chatKey, MayApprove: true}

	start := time.Now()
	asked, err := sa.Request(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Request over the cluster table: %v", time.Since(start))
	if p := sb.Pending(chatKey); len(p) != 1 || p[0].Code != asked.Code {
		t.Fatalf("the other replica sees pending %+v, want %s", p, asked.Code)
	}
	start = time.Now()
	if _, _, err := sb.Approve(asked.Code, admin); err != nil {
		t.Fatalf("approving on the other replica: %v", err)
	}
	t.Logf("Approve over the cluster table: %v", time.Since(start))
	if _, _, err := sa.Approve(asked.Code, admin); !errors.Is(err, policy.ErrAlreadyApproved) {
		t.Errorf("approving again on the first replica: %v", err)
	}
	start = time.Now()
	if _, ok, err := sa.UseGrant(chatKey, "exec_shell", req.ArgsJSON); !ok || err != nil {
		t.Fatalf("the asking replica could not use the grant: %v, %v", ok, err)
	}
	t.Logf("UseGrant over the cluster table: %v", time.Since(start))

	// The last use, raced for by both replicas: exactly one gets it.
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for _, s := range []*policy.Store{sa, sb, sa, sb} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, ok, err := s.UseGrant(chatKey, "exec_shell", req.ArgsJSON)
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Errorf("the last use of a grant was used %d times", wins)
	}
}

// Replicas sweeping at the same time report each expiry once between them.
func TestApprovalExpiresOnceAcrossReplicas(t *testing.T) {
	a := startNode(t, "a", nil)
	b := startNode(t, "b", a)
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	opt := policy.Options{ApprovalTTL: time.Minute, Now: clock}
	sa, sb := policy.OpenShared(a.Table("approvals"), opt), policy.OpenShared(b.Table("approvals"), opt)
	for _, cmd := range []string{`{"command":"a"}`, `{"command":"b"}`, `{"command":"c"}`} {
		if _, err := sa.Request(policy.ApprovalRequest{ChatKey: "c", Identity: "t:1", Tool: "exec_shell", ArgsJSON: json.RawMessage(cmd)}); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	seen := map[string]int{}
	var wg sync.WaitGroup
	for _, s := range []*policy.Store{sa, sb, sa, sb} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			exp, err := s.Expire()
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, e := range exp {
				seen[e.Code]++
			}
		}()
	}
	wg.Wait()
	if len(seen) != 3 {
		t.Errorf("%d of 3 expiries reported", len(seen))
	}
	for code, n := range seen {
		if n != 1 {
			t.Errorf("expiry of %s reported %d times", code, n)
		}
	}
}

// A person who wrote to one replica is found on another once the first
// has flushed its book.
func TestContactsAreOneBookAcrossReplicas(t *testing.T) {
	a := startNode(t, "a", nil)
	b := startNode(t, "b", a)
	ba := contacts.OpenShared(a.Table("contacts"), zerolog.Nop())
	bb := contacts.OpenShared(b.Table("contacts"), zerolog.Nop())
	ba.Learn(context.Background(), ingress.Submission{Channel: "telegram", ChatKey: "telegram:chat:77",
		Message: ingress.IncomingChatMessage{ChatID: "77", ChatType: "private", UserID: "77", Username: "ann", MessageID: "1"}})
	if err := ba.Flush(); err != nil {
		t.Fatal(err)
	}
	c, err := bb.Find("@ann")
	if err != nil {
		t.Fatal(err)
	}
	if c.Identity != "telegram:77" || c.Best().ChatID != "77" {
		t.Errorf("found %+v", c)
	}
}
