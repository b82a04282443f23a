package adapters

import (
	"context"
	"sync"
	"time"
)

// Workers owns every goroutine an adapter starts besides Run itself (notes,
// busy timers, token refreshers), so that when Run returns nothing of the
// adapter runs on. Go refuses new work once Stop has begun; Stop cancels the
// context the work was given and waits for it. The zero value is not
// usable: call NewWorkers.
type Workers struct {
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex // guards stopped and the wg.Add that goes with it
	stopped bool
	wg      sync.WaitGroup
}

// NewWorkers returns a running owner.
func NewWorkers() *Workers {
	ctx, cancel := context.WithCancel(context.Background())
	return &Workers{ctx: ctx, cancel: cancel}
}

// Go runs f in its own goroutine with a context that ends at Stop. It
// reports false, and runs nothing, once Stop has begun.
func (w *Workers) Go(f func(ctx context.Context)) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return false
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		f(w.ctx)
	}()
	return true
}

// GoAfter runs f after d, unless Stop comes first.
func (w *Workers) GoAfter(d time.Duration, f func(ctx context.Context)) bool {
	return w.Go(func(ctx context.Context) {
		if SleepCtx(ctx, d) {
			f(ctx)
		}
	})
}

// Stop cancels the work's context and waits until every goroutine started
// by Go has returned. It is safe to call more than once.
func (w *Workers) Stop() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	w.cancel()
	w.wg.Wait()
}
