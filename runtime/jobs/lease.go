package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"
)

// Lease is seed 001's lease on a call (§5.3, "each call gets a lease_id +
// ttl, reclaimed by force on expiry"): every job holds one from its start.
// Its TTL is the job's timeout, and the job's context carries it as its
// deadline, so expiry needs no timer of its own: the context ends, the
// job's work is cancelled (a command's process group killed, a sub-agent's
// model and tool calls stopped) and the job is recorded as failed with an
// expired lease.
type Lease struct {
	ID string `json:"id"`
	// TTLMS is how long the lease lasts, in milliseconds.
	TTLMS   int64     `json:"ttlMs"`
	Expires time.Time `json:"expires"`
	// Expired says the job was reclaimed because its lease ran out.
	Expired bool `json:"expired,omitempty"`
}

// newLease issues a lease of ttl from now.
func newLease(now time.Time, ttl time.Duration) *Lease {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on the platforms Go supports; a
		// lease id is a name, not a secret, so the time stands in.
		return &Lease{ID: "L" + now.Format("150405.000000"), TTLMS: ttl.Milliseconds(), Expires: now.Add(ttl)}
	}
	return &Lease{ID: "L" + hex.EncodeToString(b[:]), TTLMS: ttl.Milliseconds(), Expires: now.Add(ttl)}
}

// leaseRanOut reports whether a job's context ended because its lease
// expired (not a cancel, not ship stopping).
func leaseRanOut(ctx context.Context) bool {
	return errors.Is(ctx.Err(), context.DeadlineExceeded)
}

// LeaseNote is how /jobs shows the lease of job j at now: ", lease L… (Ns
// left)" while it runs, ", lease L… expired" when it was reclaimed, ""
// otherwise.
func (j Job) LeaseNote(now time.Time) string {
	switch {
	case j.Lease == nil:
		return ""
	case j.Lease.Expired:
		return ", lease " + j.Lease.ID + " expired"
	case j.State == Running:
		return ", lease " + j.Lease.ID + " " + max(j.Lease.Expires.Sub(now), 0).Round(time.Second).String() + " left"
	}
	return ""
}
