package events

import (
	"sync"
	"time"
)

// Bus fans events out to subscribers. Publish never blocks: a subscriber
// that does not keep up is cut off (its channel closed, Overflowed true)
// rather than slowing the runtime or anyone else.
type Bus struct {
	now    func() time.Time
	replay int

	mu     sync.Mutex
	origin string      // this replica's name (cluster mode)
	relay  func(Event) // hands this replica's events to the others
	nextID uint64
	// ring keeps the last `replay` events; once full, head is the oldest
	// and each new event overwrites it. (Shifting a full slice by one on
	// every publish copied the whole window: a third of a turn's CPU.)
	ring []Event
	head int
	subs map[*Subscription]struct{}
}

// Subscription receives the events its filter accepts on C.
type Subscription struct {
	C      <-chan Event
	c      chan Event
	filter func(Event) bool
	bus    *Bus

	mu         sync.Mutex
	closed     bool
	overflowed bool
}

// DefaultReplay is how many recent events a Bus keeps for Last-Event-ID.
const DefaultReplay = 1024

// NewBus returns a bus that keeps the last replay events (0 → DefaultReplay).
func NewBus(replay int) *Bus {
	if replay <= 0 {
		replay = DefaultReplay
	}
	return &Bus{now: time.Now, replay: replay, subs: make(map[*Subscription]struct{})}
}

// Relay makes the bus part of a cluster: every event published here is
// marked as this replica's (Event.Replica) and handed to relay, which
// sends it to the other replicas; their events come back through Deliver.
// Call it before events flow.
func (b *Bus) Relay(replica string, relay func(Event)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.origin, b.relay = replica, relay
}

// Publish stamps e with an id (and a timestamp when it has none) and hands
// it to every subscriber whose filter accepts it.
func (b *Bus) Publish(e Event) Event {
	b.mu.Lock()
	relay := b.relay
	if b.origin != "" {
		e.Replica = b.origin
	}
	e = b.fanOutLocked(e)
	b.mu.Unlock()
	if relay != nil {
		relay(e)
	}
	return e
}

// Deliver fans out an event another replica published: it gets an id of
// this bus, and is not relayed again.
func (b *Bus) Deliver(e Event) Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fanOutLocked(e)
}

func (b *Bus) fanOutLocked(e Event) Event {
	b.nextID++
	e.ID = b.nextID
	if e.Timestamp == 0 {
		e.Timestamp = b.now().UnixMilli()
	}
	if len(b.ring) < b.replay {
		b.ring = append(b.ring, e)
	} else {
		b.ring[b.head] = e
		b.head = (b.head + 1) % len(b.ring)
	}
	for s := range b.subs {
		if s.filter != nil && !s.filter(e) {
			continue
		}
		select {
		case s.c <- e:
		default:
			s.overflow()
			delete(b.subs, s)
		}
	}
	return e
}

// Subscribe starts a subscription with a buffer of buf events (0 → 256).
// When after > 0, the retained events with a larger id that pass filter are
// delivered first (Last-Event-ID); whether events were lost in between is
// reported by complete: false when the replay window no longer reaches back.
func (b *Bus) Subscribe(filter func(Event) bool, after uint64, buf int) (s *Subscription, complete bool) {
	if buf <= 0 {
		buf = 256
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var backlog []Event
	complete = true
	if after > 0 {
		if len(b.ring) > 0 && b.ring[b.head].ID > after+1 {
			complete = false
		}
		for i := range b.ring {
			e := b.ring[(b.head+i)%len(b.ring)]
			if e.ID > after && (filter == nil || filter(e)) {
				backlog = append(backlog, e)
			}
		}
	}
	c := make(chan Event, buf+len(backlog))
	for _, e := range backlog {
		c <- e
	}
	s = &Subscription{C: c, c: c, filter: filter, bus: b}
	b.subs[s] = struct{}{}
	return s, complete
}

// Close ends the subscription; C is closed.
func (s *Subscription) Close() {
	s.bus.mu.Lock()
	delete(s.bus.subs, s)
	s.bus.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.c)
	}
}

// Overflowed reports whether the subscription was cut off for falling
// behind (its channel is closed then).
func (s *Subscription) Overflowed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.overflowed
}

// overflow is called with the bus lock held.
func (s *Subscription) overflow() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.overflowed, s.closed = true, true
		close(s.c)
	}
}

// Watches reports whether anyone would see e if it were published now: a
// subscription whose filter takes it, or (cluster mode) the other
// replicas, whose subscribers this one cannot ask. A run whose content
// nobody watches need not stream its text from the model.
func (b *Bus) Watches(e Event) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.relay != nil {
		return true
	}
	for s := range b.subs {
		if s.filter == nil || s.filter(e) {
			return true
		}
	}
	return false
}

// Subscribers is how many subscriptions are open.
func (b *Bus) Subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}
