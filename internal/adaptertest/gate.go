package adaptertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/shipmyagent/ship/adapters"
)

// Gate stands in for the cluster's connection lease (adapters.Gate): a
// test grants the connection and takes it back, as replicas winning and
// losing the lease would. A new Gate is shut: the process is a standby.
type Gate struct {
	mu      sync.Mutex
	open    bool
	changed chan struct{} // closed and replaced at every change below
	calls   int           // connect was called this many times
	returns int           // and returned this many times
	cancel  context.CancelFunc
}

// NewGate returns a shut gate.
func NewGate() *Gate { return &Gate{changed: make(chan struct{})} }

// Hold is the adapters.Gate: like the cluster's lease it calls connect only
// while the gate is open, with a context that ends when the test shuts it,
// and calls connect again when it opens again. It returns nil when ctx
// ends, or connect's error when connect returns on its own.
func (g *Gate) Hold(ctx context.Context, _ string, connect func(ctx context.Context) error) error {
	for {
		cctx, ok := g.admit(ctx)
		if !ok {
			return nil
		}
		err := connect(cctx)
		withdrawn := cctx.Err() != nil
		g.mu.Lock()
		g.returns++
		g.cancel = nil
		g.changedLocked()
		g.mu.Unlock()
		if ctx.Err() != nil {
			return nil
		}
		if !withdrawn {
			return err
		}
	}
}

// admit waits until the gate is open (or ctx ends) and returns the context
// connect runs with.
func (g *Gate) admit(ctx context.Context) (context.Context, bool) {
	for {
		g.mu.Lock()
		if g.open {
			cctx, cancel := context.WithCancel(ctx)
			g.cancel = cancel
			g.calls++
			g.changedLocked()
			g.mu.Unlock()
			return cctx, true
		}
		ch := g.changed
		g.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, false
		case <-ch:
		}
	}
}

// Open grants the connection.
func (g *Gate) Open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open = true
	g.changedLocked()
}

// Shut takes the connection back: connect's context ends.
func (g *Gate) Shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open = false
	if g.cancel != nil {
		g.cancel()
	}
	g.changedLocked()
}

// Counts reports how often connect was called and how often it returned.
func (g *Gate) Counts() (calls, returns int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls, g.returns
}

// WaitReturned waits until connect has returned n times in all.
func (g *Gate) WaitReturned(t testing.TB, n int) {
	t.Helper()
	g.wait(t, func() bool { return g.returns >= n }, "connect to return")
}

// WaitCalled waits until connect has been called n times in all.
func (g *Gate) WaitCalled(t testing.TB, n int) {
	t.Helper()
	g.wait(t, func() bool { return g.calls >= n }, "connect to be called")
}

func (g *Gate) wait(t testing.TB, cond func() bool, what string) {
	t.Helper()
	timeout := time.NewTimer(HangGuard)
	defer timeout.Stop()
	for {
		g.mu.Lock()
		ok, ch := cond(), g.changed
		g.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-timeout.C:
			t.Fatalf("hang guard: still waiting for %s", what)
		}
	}
}

func (g *Gate) changedLocked() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// WaitStandby waits until a says it is on standby: the status Gate.Hold
// (adapters.Gate) shows while another replica holds the connection.
func WaitStandby(t testing.TB, a interface{ Status() adapters.Status }) {
	t.Helper()
	WaitFor(t, "the adapter on standby", func() bool {
		st := a.Status()
		return st.State == adapters.StateStandby && st.Detail == adapters.StandbyDetail
	})
}
