// Package fakeclock is a clock tests move by hand, so that waiting for
// time to pass never needs a sleep. Pass its Now where code takes a
// func() time.Time.
package fakeclock

import (
	"sync"
	"time"
)

// Clock is a settable clock; safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a clock standing at t.
func New(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
