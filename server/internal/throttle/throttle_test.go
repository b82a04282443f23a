package throttle

import (
	"fmt"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeclock"
)

func TestAnAddressIsHeldBackForTheRestOfTheWindow(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	l := New(Options{Failures: 3, Window: time.Minute, Now: clock.Now})
	for i := range 3 {
		wait, held := l.Check("192.0.2.1", false)
		if wait != 0 || held != (i == 2) {
			t.Fatalf("failure %d: wait %v, held %v", i+1, wait, held)
		}
		clock.Advance(10 * time.Second)
	}
	// Failures at 0 s, 10 s, 20 s; now 30 s: the first leaves at 60 s.
	if wait, _ := l.Check("192.0.2.1", true); wait != 30*time.Second {
		t.Errorf("the right credential while held: wait %v, want 30s", wait)
	}
	if wait := l.Wait("192.0.2.1"); wait != 30*time.Second {
		t.Errorf("Wait = %v, want 30s", wait)
	}
	if wait := l.Wait("192.0.2.2"); wait != 0 {
		t.Errorf("another address waits %v", wait)
	}
	clock.Advance(30 * time.Second)
	// One attempt is free again, and one more failure holds it back again.
	if wait, held := l.Check("192.0.2.1", false); wait != 0 || !held {
		t.Errorf("after the first failure left the window: wait %v, held %v", wait, held)
	}
	if wait, _ := l.Check("192.0.2.1", true); wait != 10*time.Second {
		t.Errorf("held again: wait %v, want 10s", wait)
	}
}

func TestRightCredentialsNeitherCountNorClearFailures(t *testing.T) {
	l := New(Options{Failures: 2, Now: fakeclock.New(time.Unix(0, 0)).Now})
	l.Check("a", false)
	for range 100 {
		if wait, _ := l.Check("a", true); wait != 0 {
			t.Fatal("a right credential was held back")
		}
	}
	if _, held := l.Check("a", false); !held {
		t.Error("good requests in between cleared the earlier failure")
	}
}

func TestTheTableIsBounded(t *testing.T) {
	clock := fakeclock.New(time.Unix(0, 0))
	l := New(Options{Failures: 2, MaxAddresses: 100, Now: clock.Now})
	l.Check("first", false)
	l.Check("first", false)
	for i := range 1000 {
		clock.Advance(time.Millisecond)
		l.Check(fmt.Sprintf("10.0.%d.%d", i/256, i%256), false)
	}
	if n := len(l.fails); n > 100 {
		t.Fatalf("%d addresses remembered, want at most 100", n)
	}
	// The address with the oldest failures made room first.
	if l.Wait("first") != 0 {
		t.Error(`"first" is still held after 1000 newer addresses`)
	}
	// Entries whose failures left the window go before any live one.
	clock.Advance(time.Minute)
	l.Check("late", false)
	if n := len(l.fails); n != 1 {
		t.Errorf("%d addresses remembered after the window passed, want 1", n)
	}
}

func TestKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7:4000":              "192.0.2.7",
		"[::ffff:192.0.2.7]:1":        "192.0.2.7",
		"[2001:db8:1:2:3:4:5:6]:4000": "2001:db8:1:2::/64",
		"[2001:db8:1:2::9]:1":         "2001:db8:1:2::/64",
		"[::1]:80":                    "::/64",
		"pipe":                        "pipe",
	} {
		if got := Key(in); got != want {
			t.Errorf("Key(%q) = %q, want %q", in, got, want)
		}
	}
}
