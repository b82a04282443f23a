package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// errLeaseLost says another replica holds the lease now (or it expired):
// whoever worked under it must stop.
var errLeaseLost = errors.New("lease lost")

// leaseValue is what a lease key holds.
type leaseValue struct {
	Holder string `json:"holder"`
	Boot   string `json:"boot"`
	Since  int64  `json:"since"` // ms
}

// lease is one key of the leases bucket held by this replica. The bucket's
// TTL expires a lease its holder stopped renewing, so a dead replica's
// work is free again after at most leaseTTL.
type lease struct {
	n   *Node
	key string
	rev uint64
	val []byte
	// taken is the revision that created the lease: each holder's is
	// higher than every earlier holder's, so it is the fencing token run
	// state is written with (runState.Lease).
	taken uint64

	mu sync.Mutex
	// lastOK is when the last successful renewal was sent: the server
	// stamped it later, so the lease lives at least leaseTTL past lastOK.
	lastOK time.Time
	lost   bool
}

// tryAcquire takes lease key if nobody holds it; (nil, nil) when someone
// does.
func (n *Node) tryAcquire(ctx context.Context, key string) (*lease, error) {
	val, _ := json.Marshal(leaseValue{Holder: n.opts.Replica, Boot: n.boot, Since: time.Now().UnixMilli()})
	sent := time.Now()
	rev, err := n.leases.Create(ctx, key, val)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("taking lease %s: %w", key, err)
	}
	return &lease{n: n, key: key, rev: rev, val: val, taken: rev, lastOK: sent}, nil
}

// renew extends the lease. It returns errLeaseLost when another replica
// took it, or when renewing failed for so long that the lease may have
// expired: the holder then stops rather than risk two holders.
func (l *lease) renew(ctx context.Context) error {
	sent := time.Now()
	rev, err := l.n.leases.Update(ctx, l.key, l.val, l.rev)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost {
		return errLeaseLost
	}
	if err == nil {
		l.rev, l.lastOK = rev, sent
		return nil
	}
	var apiErr *jetstream.APIError
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
		l.lost = true
		return errLeaseLost
	}
	if time.Since(l.lastOK) > leaseTTL-leaseRenew {
		l.lost = true
		return fmt.Errorf("%w: not renewed for %s: %v", errLeaseLost, time.Since(l.lastOK).Round(time.Millisecond), err)
	}
	return nil // NATS hiccup (a leader election): try again at the next tick
}

// held reports whether this replica may still act under the lease: it was
// not lost, and its last renewal is recent enough that the server cannot
// have expired it yet (it lives leaseTTL past lastOK; leaseRenew of that
// is margin for the write about to be made under it). A replica paused
// (SIGSTOP, a long GC, a VM migration) past that wakes up not holding it,
// before any renewal tells it so.
func (l *lease) held() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.lost && time.Since(l.lastOK) >= leaseTTL-leaseRenew {
		// Lapsed stays lapsed: a renewal that succeeds later must not
		// revive a lease whose runs were fenced meanwhile.
		l.lost = true
	}
	return !l.lost
}

// due reports whether the lease should be renewed now: balance looks every
// leaseRetry, and renewing every leaseRenew is enough.
func (l *lease) due() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return time.Since(l.lastOK) >= leaseRenew/2
}

// release gives the lease back at once, so the next holder need not wait
// for it to expire.
func (l *lease) release() {
	l.mu.Lock()
	l.lost = true
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := l.n.leases.Delete(ctx, l.key, jetstream.LastRevision(l.rev)); err != nil {
		l.n.log.Debug().Err(err).Str("lease", l.key).Msg("giving a lease back; it expires by itself")
	}
}

// connLeasePrefix names the leases of single platform connections.
const connLeasePrefix = "conn."

// Hold runs fn while this replica holds the lease for the single
// connection name (a Telegram long poll, the Feishu websocket, the QQ
// gateway): it waits until the lease is free, runs fn with a context that
// ends when the lease is lost, and gives the lease back when fn returns.
// It returns when ctx ends, or when fn returns on its own (it gave up).
func (n *Node) Hold(ctx context.Context, name string, fn func(ctx context.Context) error) error {
	key := connLeasePrefix + name
	for {
		l, err := n.tryAcquire(ctx, key)
		if err != nil && ctx.Err() == nil {
			n.log.Debug().Err(err).Str("lease", key).Msg("lease not taken; retrying")
		}
		if l == nil {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(leaseRetry):
				continue
			}
		}
		n.log.Info().Str("lease", key).Msg("this replica now holds the connection")
		lost, err := n.runHolding(ctx, l, fn)
		l.release()
		if ctx.Err() != nil {
			return nil
		}
		if !lost {
			return err
		}
		n.log.Warn().Str("lease", key).Msg("connection lease lost; standing by")
	}
}

// runHolding runs fn under l, renewing it; lost says fn was stopped
// because the lease was lost.
func (n *Node) runHolding(ctx context.Context, l *lease, fn func(ctx context.Context) error) (lost bool, err error) {
	hctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan error, 1)
	go func() { done <- fn(hctx) }()
	t := time.NewTicker(leaseRenew)
	defer t.Stop()
	for {
		select {
		case err := <-done:
			return errors.Is(context.Cause(hctx), errLeaseLost), err
		case <-t.C:
			rctx, rcancel := context.WithTimeout(ctx, leaseRenew)
			rerr := l.renew(rctx)
			rcancel()
			if errors.Is(rerr, errLeaseLost) {
				cancel(rerr)
				return true, <-done
			}
		}
	}
}

// Holder is who holds one lease.
type Holder struct {
	Name   string `json:"name"`
	Holder string `json:"holder"`
	Since  int64  `json:"since"`
}

// holders lists the leases whose key starts with prefix.
func (n *Node) holders(ctx context.Context, prefix string) ([]Holder, error) {
	var out []Holder
	err := eachValue(ctx, n.leases, prefix+">", func(key string, v leaseValue) {
		out = append(out, Holder{Name: strings.TrimPrefix(key, prefix), Holder: v.Holder, Since: v.Since})
	})
	if err != nil {
		return nil, fmt.Errorf("listing leases: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
