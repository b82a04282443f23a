package policy

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeclock"
	"github.com/shipmyagent/ship/runtime/records"
)

// twoReplicas are two stores over one table, as two replicas of a cluster
// see it.
func twoReplicas(t *testing.T, opt Options) (*Store, *Store, *fakeclock.Clock) {
	t.Helper()
	c := fakeclock.New(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	opt.Now = c.Now
	tab := records.NewMemory()
	return OpenShared(tab, opt), OpenShared(tab, opt), c
}

func TestSharedApprovalIsAnsweredAnywhere(t *testing.T) {
	a, b, c := twoReplicas(t, Options{})
	req, err := a.Request(ask)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := b.Request(ask); again.Code != req.Code {
		t.Errorf("the same call asked on the other replica got a second code %s", again.Code)
	}
	if p := b.Pending(chatA); len(p) != 1 || p[0].Code != req.Code {
		t.Fatalf("pending on the other replica: %+v", p)
	}
	if _, _, err := b.Approve(req.Code, Approver{Identity: "telegram:3", ChatKey: chatA}); !errors.Is(err, ErrNotApprover) {
		t.Errorf("a non-approver: %v", err)
	}
	got, g, err := b.Approve(strings.ToLower(req.Code), admin)
	if err != nil || got.Status != StatusApproved || g.Code != req.Code || !g.Expires.Equal(c.Now().Add(DefaultGrantTTL)) {
		t.Fatalf("Approve = %+v, %+v, %v", got, g, err)
	}
	if _, _, err := a.Approve(req.Code, admin); !errors.Is(err, ErrAlreadyApproved) {
		t.Errorf("approving twice: %v", err)
	}
	if _, err := a.Deny(req.Code, admin); !errors.Is(err, ErrAlreadyApproved) {
		t.Errorf("denying an approved call: %v", err)
	}
	if _, ok, err := a.UseGrant(chatB, "exec_shell", ask.ArgsJSON); ok || err != nil {
		t.Errorf("a grant used in another chat: %v, %v", ok, err)
	}
	// The same arguments, spaced and ordered otherwise.
	if used, ok, err := a.UseGrant(chatA, "exec_shell", []byte(`{"timeout":30,"command":"git push"}`)); !ok || err != nil || used.Uses != 1 {
		t.Fatalf("UseGrant on the replica that asked = %+v, %v, %v", used, ok, err)
	}
	if _, ok, _ := b.UseGrant(chatA, "exec_shell", ask.ArgsJSON); ok {
		t.Error("a one-use grant was used twice")
	}
	if got, ok := a.Get(req.Code); !ok || got.Status != StatusApproved || got.DecidedBy != admin.Identity {
		t.Errorf("Get = %+v, %v", got, ok)
	}
}

func TestSharedDenyAndExpireOnce(t *testing.T) {
	a, b, c := twoReplicas(t, Options{})
	denied, _ := a.Request(ask)
	if _, err := b.Deny(denied.Code, Approver{Identity: ask.Identity, ChatKey: chatA}); err != nil {
		t.Fatalf("the requester withdrawing: %v", err)
	}
	if _, _, err := a.Approve(denied.Code, admin); !errors.Is(err, ErrAlreadyDenied) {
		t.Errorf("approving a denied call: %v", err)
	}
	other := ask
	other.Arg, other.ArgsJSON = "make", []byte(`{"command":"make"}`)
	waiting, _ := a.Request(other)
	c.Advance(DefaultApprovalTTL)
	if _, _, err := b.Approve(waiting.Code, admin); !errors.Is(err, ErrExpired) {
		t.Errorf("approving late: %v", err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var got []Approval
	for _, s := range []*Store{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			exp, err := s.Expire()
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			got = append(got, exp...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(got) != 1 || got[0].Code != waiting.Code || got[0].Status != StatusExpired {
		t.Fatalf("four sweeps returned %+v, want the one expiry once", got)
	}
	if p := b.Pending(""); len(p) != 0 {
		t.Errorf("still pending: %+v", p)
	}
	c.Advance(DefaultRetain + time.Minute)
	if _, err := a.Expire(); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Get(waiting.Code); ok {
		t.Error("an approval expired longer than Retain ago was kept")
	}
}

func TestSharedLastGrantUseGoesToOneReplica(t *testing.T) {
	a, b, _ := twoReplicas(t, Options{GrantMaxUses: 3})
	req, _ := a.Request(ask)
	if _, _, err := b.Approve(req.Code, admin); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	uses := 0
	for i := range 16 {
		s := []*Store{a, b}[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, ok, err := s.UseGrant(chatA, "exec_shell", ask.ArgsJSON); ok && err == nil {
				mu.Lock()
				uses++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if uses != 3 {
		t.Errorf("%d uses of a three-use grant", uses)
	}
}

func TestSharedStoreIsBounded(t *testing.T) {
	a, _, _ := twoReplicas(t, Options{})
	for i := range maxPendingPerChat {
		r := ask
		r.ArgsJSON = []byte(`{"n":` + strings.Repeat("1", i+1) + `}`)
		if _, err := a.Request(r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Request(ApprovalRequest{ChatKey: chatA, Identity: "a:b", Tool: "t"}); !errors.Is(err, ErrTooManyPending) {
		t.Errorf("request over the limit: %v", err)
	}
}

// Across replicas the approval rules are the same as in one process: an
// approver in another chat, or the requester without the role, cannot
// approve on the other replica; no grant comes of it.
func TestSharedApprovalRefusesTheWrongChatAndTheRequester(t *testing.T) {
	a, b, _ := twoReplicas(t, Options{})
	req, err := a.Request(ask)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Approve(req.Code, Approver{Identity: admin.Identity, ChatKey: chatB, MayApprove: true}); !errors.Is(err, ErrWrongChat) {
		t.Errorf("an approver in another chat: %v", err)
	}
	if _, _, err := b.Approve(req.Code, Approver{Identity: ask.Identity, ChatKey: chatA}); !errors.Is(err, ErrNotApprover) {
		t.Errorf("the requester without the role: %v", err)
	}
	if _, ok, _ := a.UseGrant(chatA, ask.Tool, ask.ArgsJSON); ok {
		t.Error("a refused approval left a grant")
	}
	if p := a.Pending(chatA); len(p) != 1 {
		t.Errorf("refused approvals changed what waits: %+v", p)
	}
}
