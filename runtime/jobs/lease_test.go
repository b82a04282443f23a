package jobs

import (
	"strings"
	"testing"
	"time"
)

// TestEveryJobHoldsALeaseThatExpiresWithItsTimeout: the lease is shown
// from the start (id, TTL = the timeout) and a job past it ends failed,
// its lease marked expired; a job that ends in time keeps a live lease.
func TestEveryJobHoldsALeaseThatExpiresWithItsTimeout(t *testing.T) {
	m, ch := open(t, Options{MaxDuration: time.Hour})
	j, err := m.Start(spec("a"), 5*time.Millisecond, blocker(make(chan struct{})))
	if err != nil {
		t.Fatal(err)
	}
	if j.Lease == nil || !strings.HasPrefix(j.Lease.ID, "L") || j.Lease.TTLMS != 5 || !j.Lease.Expires.Equal(j.Started.Add(5*time.Millisecond)) {
		t.Fatalf("a started job's lease is %+v, want an id and a TTL of its timeout", j.Lease)
	}
	got := <-ch
	if got.State != Failed || got.Lease == nil || !got.Lease.Expired || got.Lease.ID != j.Lease.ID {
		t.Fatalf("a job past its lease ended %s with lease %+v, want failed with the same lease expired", got.State, got.Lease)
	}

	release := make(chan struct{})
	k, err := m.Start(spec("a"), time.Hour, blocker(release))
	if err != nil {
		t.Fatal(err)
	}
	if k.Lease.ID == j.Lease.ID {
		t.Fatalf("two jobs got the same lease id %s", k.Lease.ID)
	}
	close(release)
	if got := <-ch; got.State != Done || got.Lease.Expired {
		t.Fatalf("a job that ended in time: %s, lease %+v", got.State, got.Lease)
	}
}

// TestACancelledJobsLeaseDidNotExpire: /cancel is not an expiry.
func TestACancelledJobsLeaseDidNotExpire(t *testing.T) {
	m, ch := open(t, Options{})
	j, err := m.Start(spec("a"), 0, blocker(make(chan struct{})))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Cancel("a", j.ID, "ann"); err != nil {
		t.Fatal(err)
	}
	if got := <-ch; got.State != Cancelled || got.Lease.Expired {
		t.Fatalf("a cancelled job: %s, lease %+v", got.State, got.Lease)
	}
}
