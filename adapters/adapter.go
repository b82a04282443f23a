package adapters

import (
	"context"
	"sync"
	"time"
)

// Adapter is one platform connection (Telegram, Feishu, QQ).
type Adapter interface {
	// Name is the channel name ("telegram").
	Name() string
	// Run connects and serves until ctx is cancelled, then returns nil;
	// long polls and websockets end with ctx. An error means the adapter
	// gave up (a bad token, say).
	Run(ctx context.Context) error
	// Status reports the adapter's state for /api/status.
	Status() Status
}

// Status is an adapter's state as /api/status shows it.
type Status struct {
	Name   string `json:"name"`
	State  string `json:"state"` // starting | running | reconnecting | stopped | failed | unavailable
	Detail string `json:"detail,omitempty"`
}

// StatusBox holds an adapter's Status for concurrent readers.
type StatusBox struct {
	mu sync.Mutex
	s  Status
}

// Set replaces the status.
func (b *StatusBox) Set(name, state, detail string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.s = Status{Name: name, State: state, Detail: detail}
}

// Get returns the status.
func (b *StatusBox) Get() Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.s
}

// BusyNotes decides when a chat is told that its message waits in line: at
// most once per chat per Every, so a busy queue does not turn into spam.
type BusyNotes struct {
	Every time.Duration // 0 → 30 s
	Now   func() time.Time

	mu   sync.Mutex
	last map[string]time.Time
}

// Allow reports whether chatKey may get a busy note now, and if so records
// that it got one.
func (b *BusyNotes) Allow(chatKey string) bool {
	every := b.Every
	if every <= 0 {
		every = 30 * time.Second
	}
	now := time.Now()
	if b.Now != nil {
		now = b.Now()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last == nil {
		b.last = make(map[string]time.Time)
	}
	if t, ok := b.last[chatKey]; ok && now.Sub(t) < every {
		return false
	}
	// Forget old entries now and then so the map stays small.
	if len(b.last) > 10_000 {
		for k, t := range b.last {
			if now.Sub(t) >= every {
				delete(b.last, k)
			}
		}
	}
	b.last[chatKey] = now
	return true
}
