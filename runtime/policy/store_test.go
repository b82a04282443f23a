package policy

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeclock"
)

func newStore(t *testing.T) (*Store, *fakeclock.Clock, string) {
	t.Helper()
	c := fakeclock.New(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	path := filepath.Join(t.TempDir(), "state", "approvals.json")
	s, err := OpenStore(path, Options{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	return s, c, path
}

func reopen(t *testing.T, path string, c *fakeclock.Clock) *Store {
	t.Helper()
	s, err := OpenStore(path, Options{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const chatA, chatB = "telegram:chat:-1001", "telegram:chat:-1002"

var (
	admin = Approver{Identity: "telegram:1", ChatKey: chatA, MayApprove: true}
	ask   = ApprovalRequest{ChatKey: chatA, Identity: "telegram:2", Tool: "exec_shell", Arg: "git push",
		ArgsJSON: json.RawMessage(`{"command": "git push", "timeout": 30}`), Route: json.RawMessage(`{"chatId":"-1001","messageId":"9"}`)}
)

func TestApprovalLifecycle(t *testing.T) {
	s, c, _ := newStore(t)
	a, err := s.Request(ask)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Code) != 6 || strings.ContainsAny(a.Code, "0O1I") || a.Status != StatusPending ||
		!a.Expires.Equal(c.Now().Add(DefaultApprovalTTL)) || string(a.Route) != string(ask.Route) {
		t.Fatalf("Request = %+v", a)
	}
	if again, _ := s.Request(ask); again.Code != a.Code {
		t.Errorf("the same call asked twice got a second code %s", again.Code)
	}
	if _, ok, _ := s.UseGrant(chatA, "exec_shell", ask.ArgsJSON); ok {
		t.Fatal("a grant before approval")
	}
	for _, tc := range []struct {
		name string
		code string
		by   Approver
		want error
	}{
		{"foreign code", "ZZZZZZ", admin, ErrUnknownCode},
		{"other chat", a.Code, Approver{Identity: admin.Identity, ChatKey: chatB, MayApprove: true}, ErrWrongChat},
		{"non-approver", a.Code, Approver{Identity: "telegram:3", ChatKey: chatA}, ErrNotApprover},
		{"requester who may not approve", a.Code, Approver{Identity: ask.Identity, ChatKey: chatA}, ErrNotApprover},
	} {
		if _, _, err := s.Approve(tc.code, tc.by); !errors.Is(err, tc.want) {
			t.Errorf("%s: Approve error %v, want %v", tc.name, err, tc.want)
		}
	}
	got, g, err := s.Approve(" "+strings.ToLower(a.Code)+" ", admin)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusApproved || got.DecidedBy != admin.Identity || g.Code != a.Code || g.MaxUses != 1 ||
		!g.Expires.Equal(c.Now().Add(DefaultGrantTTL)) {
		t.Errorf("Approve = %+v, %+v", got, g)
	}
	if _, _, err := s.Approve(a.Code, admin); !errors.Is(err, ErrAlreadyApproved) {
		t.Errorf("approving twice: %v", err)
	}
	if _, err := s.Deny(a.Code, admin); !errors.Is(err, ErrAlreadyApproved) {
		t.Errorf("denying after approval: %v", err)
	}
	// The grant covers exactly this call, once, however the JSON is spaced.
	for _, other := range []struct {
		chat, tool, args string
	}{
		{chatB, "exec_shell", `{"command":"git push","timeout":30}`},
		{chatA, "exec_shell2", `{"command":"git push","timeout":30}`},
		{chatA, "exec_shell", `{"command":"git push --force","timeout":30}`},
		{chatA, "exec_shell", `{"command":"git push"}`},
		{chatA, "exec_shell", `{"command":"git push","timeout":30,"command":"rm -rf /"}`},
		{chatA, "exec_shell", `not json`},
	} {
		if _, ok, err := s.UseGrant(other.chat, other.tool, json.RawMessage(other.args)); ok || err != nil {
			t.Errorf("UseGrant(%s, %s, %s) = %v, %v", other.chat, other.tool, other.args, ok, err)
		}
	}
	if used, ok, err := s.UseGrant(chatA, "exec_shell", json.RawMessage(`{ "timeout": 30, "command": "git push" }`)); !ok || err != nil ||
		used.Uses != 1 || used.ApprovedBy != admin.Identity || used.Code != a.Code {
		t.Fatalf("UseGrant = %+v, %v, %v", used, ok, err)
	}
	if _, ok, _ := s.UseGrant(chatA, "exec_shell", ask.ArgsJSON); ok {
		t.Error("a grant of one use was used twice")
	}
}

func TestDenyThenApproveAndExpiry(t *testing.T) {
	s, c, _ := newStore(t)
	a, _ := s.Request(ask)
	if _, err := s.Deny(a.Code, Approver{Identity: "telegram:3", ChatKey: chatA}); !errors.Is(err, ErrNotApprover) {
		t.Errorf("a stranger denied: %v", err)
	}
	d, err := s.Deny(a.Code, Approver{Identity: ask.Identity, ChatKey: chatA}) // the requester withdraws
	if err != nil || d.Status != StatusDenied {
		t.Fatalf("Deny = %+v, %v", d, err)
	}
	if _, _, err := s.Approve(a.Code, admin); !errors.Is(err, ErrAlreadyDenied) {
		t.Errorf("approving after deny: %v", err)
	}
	if _, err := s.Deny(a.Code, admin); !errors.Is(err, ErrAlreadyDenied) {
		t.Errorf("denying twice: %v", err)
	}

	b, _ := s.Request(ask) // a new request after the denied one
	if b.Code == a.Code {
		t.Fatal("a decided code was reused")
	}
	c.Advance(DefaultApprovalTTL)
	if _, _, err := s.Approve(b.Code, admin); !errors.Is(err, ErrExpired) {
		t.Errorf("approving at expiry: %v", err)
	}
	if len(s.Pending("")) != 0 {
		t.Error("an expired approval is listed as pending")
	}
	exp, err := s.Expire()
	if err != nil || len(exp) != 1 || exp[0].Code != b.Code || exp[0].Status != StatusExpired {
		t.Fatalf("Expire = %+v, %v", exp, err)
	}
	if exp, _ := s.Expire(); len(exp) != 0 {
		t.Errorf("expiry reported twice: %+v", exp)
	}
	if _, _, err := s.Approve(b.Code, admin); !errors.Is(err, ErrExpired) {
		t.Errorf("approving an expired one: %v", err)
	}
}

func TestGrantExpires(t *testing.T) {
	s, c, _ := newStore(t)
	a, _ := s.Request(ask)
	if _, _, err := s.Approve(a.Code, admin); err != nil {
		t.Fatal(err)
	}
	c.Advance(DefaultGrantTTL)
	if _, ok, _ := s.UseGrant(chatA, "exec_shell", ask.ArgsJSON); ok {
		t.Error("an expired grant was used")
	}
}

func TestGrantMaxUses(t *testing.T) {
	c := fakeclock.New(time.Unix(1e9, 0))
	s, err := OpenStore(filepath.Join(t.TempDir(), "a.json"), Options{GrantMaxUses: 2, GrantTTL: time.Minute, ApprovalTTL: time.Second, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := s.Request(ask)
	if !a.Expires.Equal(c.Now().Add(time.Second)) {
		t.Errorf("approval TTL not applied: %v", a.Expires)
	}
	if _, g, err := s.Approve(a.Code, admin); err != nil || g.MaxUses != 2 || !g.Expires.Equal(c.Now().Add(time.Minute)) {
		t.Fatalf("Approve = %+v, %v", g, err)
	}
	for i, want := range []bool{true, true, false} {
		if _, ok, _ := s.UseGrant(chatA, "exec_shell", ask.ArgsJSON); ok != want {
			t.Errorf("use %d: %v, want %v", i+1, ok, want)
		}
	}
}

func TestStoreSurvivesReopen(t *testing.T) {
	s, c, path := newStore(t)
	approved, _ := s.Request(ask)
	other := ask
	other.ArgsJSON = json.RawMessage(`{"command":"make test"}`)
	pending, _ := s.Request(other)
	third := ask
	third.ChatKey = chatB
	expiring, _ := s.Request(third)
	if _, _, err := s.Approve(approved.Code, admin); err != nil {
		t.Fatal(err)
	}

	s = reopen(t, path, c)
	if got, ok := s.Get(pending.Code); !ok || got.Status != StatusPending || string(got.Route) != string(ask.Route) {
		t.Errorf("pending approval after reopen: %+v, %v", got, ok)
	}
	if _, _, err := s.Approve(approved.Code, admin); !errors.Is(err, ErrAlreadyApproved) {
		t.Errorf("approved one after reopen: %v", err)
	}
	if _, ok, _ := s.UseGrant(chatA, "exec_shell", ask.ArgsJSON); !ok {
		t.Fatal("the grant did not survive a reopen")
	}
	s = reopen(t, path, c)
	if _, ok, _ := s.UseGrant(chatA, "exec_shell", ask.ArgsJSON); ok {
		t.Error("a used grant came back after a reopen")
	}

	// Expiry is reported once, also across a reopen.
	c.Advance(DefaultApprovalTTL + time.Second)
	exp, err := s.Expire()
	if err != nil || len(exp) != 2 || exp[0].Code == exp[1].Code {
		t.Fatalf("Expire = %+v, %v", exp, err)
	}
	for _, e := range exp {
		if e.Code != pending.Code && e.Code != expiring.Code {
			t.Errorf("unexpected expiry %s", e.Code)
		}
	}
	s = reopen(t, path, c)
	if exp, _ := s.Expire(); len(exp) != 0 {
		t.Errorf("expiry reported again after reopen: %+v", exp)
	}
	if got, ok := s.Get(pending.Code); !ok || got.Status != StatusExpired {
		t.Errorf("expired approval after reopen: %+v", got)
	}
}

func TestStoreIsBounded(t *testing.T) {
	s, c, path := newStore(t)
	a, _ := s.Request(ask)
	s.Approve(a.Code, admin)
	c.Advance(DefaultRetain + DefaultApprovalTTL + time.Minute)
	b, _ := s.Request(ask)
	if _, ok := s.Get(a.Code); ok {
		t.Error("a decided approval was kept past Retain")
	}
	if _, ok := s.Get(b.Code); !ok {
		t.Error("a live approval was pruned")
	}
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), a.Code) {
		t.Error("the pruned approval is still in the file")
	}
	for i := 1; i < maxPendingPerChat; i++ {
		r := ask
		r.ArgsJSON = json.RawMessage(`{"n":` + string(rune('0'+i%10)) + `,"i":"` + strings.Repeat("x", i) + `"}`)
		if _, err := s.Request(r); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	r := ask
	r.ArgsJSON = json.RawMessage(`{"one":"more"}`)
	if _, err := s.Request(r); !errors.Is(err, ErrTooManyPending) {
		t.Errorf("request past the limit: %v", err)
	}
	r.ChatKey = chatB
	if _, err := s.Request(r); err != nil {
		t.Errorf("another chat is not limited by this one: %v", err)
	}
}

func TestRequestValidation(t *testing.T) {
	s, _, _ := newStore(t)
	for name, r := range map[string]ApprovalRequest{
		"no chat":   {Identity: "a:b", Tool: "t"},
		"no tool":   {ChatKey: chatA, Identity: "a:b"},
		"bad args":  {ChatKey: chatA, Identity: "a:b", Tool: "t", ArgsJSON: json.RawMessage(`{`)},
		"dup key":   {ChatKey: chatA, Identity: "a:b", Tool: "t", ArgsJSON: json.RawMessage(`{"a":1,"a":2}`)},
		"trailing":  {ChatKey: chatA, Identity: "a:b", Tool: "t", ArgsJSON: json.RawMessage(`{} {}`)},
		"bad route": {ChatKey: chatA, Identity: "a:b", Tool: "t", Route: json.RawMessage(`{`)},
	} {
		if _, err := s.Request(r); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%s: %v", name, err)
		}
	}
	a, err := s.Request(ApprovalRequest{ChatKey: chatA, Identity: "a:b", Tool: "t"})
	if err != nil || string(a.ArgsJSON) != "{}" {
		t.Errorf("no args: %+v, %v", a, err)
	}
}

func TestConcurrentUseGrantGivesOneUse(t *testing.T) {
	s, _, _ := newStore(t)
	a, _ := s.Request(ask)
	if _, _, err := s.Approve(a.Code, admin); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	uses := 0
	for range 32 {
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
	if uses != 1 {
		t.Errorf("%d uses of a one-use grant", uses)
	}
}

func TestUnwritableStoreChangesNothing(t *testing.T) {
	s, _, path := newStore(t)
	a, _ := s.Request(ask)
	if _, _, err := s.Approve(a.Code, admin); err != nil {
		t.Fatal(err)
	}
	// A directory in the file's place makes every write fail, even as root.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.UseGrant(chatA, "exec_shell", ask.ArgsJSON); ok || err == nil {
		t.Fatalf("UseGrant that could not be saved = %v, %v", ok, err)
	}
	if _, err := s.Request(ApprovalRequest{ChatKey: chatB, Identity: "a:b", Tool: "t"}); err == nil {
		t.Error("Request that could not be saved succeeded")
	}
	if len(s.Pending(chatB)) != 0 {
		t.Error("an unsaved approval is listed")
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.UseGrant(chatA, "exec_shell", ask.ArgsJSON); !ok || err != nil {
		t.Errorf("the failed use was counted: %v, %v", ok, err)
	}
}

func TestCorruptStoreIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "approvals.json")
	for _, data := range []string{"{", `{"version": 2}`} {
		os.WriteFile(path, []byte(data), 0o600)
		if _, err := OpenStore(path, Options{}); err == nil {
			t.Errorf("OpenStore accepted %q", data)
		}
	}
}
