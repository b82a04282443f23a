package console

import (
	"sync"
	"time"

	"github.com/shipmyagent/ship/runtime/events"
)

// activity counts finished runs and failed ones per minute over the last
// hour, from the event bus: the Overview's "last hour".
type activity struct {
	now  func() time.Time
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	minutes [60]minute
}

type minute struct {
	at     int64 // Unix minute this slot counts
	turns  int
	errors int
}

// subscribeFunc follows run events (engine.Door.Subscribe).
type subscribeFunc func(filter func(events.Event) bool, after uint64, buf int) (*events.Subscription, bool)

// watchActivity subscribes to the final events (task_completed, error)
// and counts them until close.
func watchActivity(subscribe subscribeFunc, now func() time.Time) *activity {
	a := &activity{now: now, stop: make(chan struct{}), done: make(chan struct{})}
	go a.run(subscribe)
	return a
}

func (a *activity) run(subscribe subscribeFunc) {
	defer close(a.done)
	for {
		sub, _ := subscribe(events.Event.Final, 0, 64)
		for open := true; open; {
			select {
			case <-a.stop:
				sub.Close()
				return
			case e, ok := <-sub.C:
				if !ok {
					// Fell behind (a burst of runs ending at once): count on
					// with a new subscription; the burst is undercounted.
					open = false
					break
				}
				a.count(e)
			}
		}
	}
}

func (a *activity) count(e events.Event) {
	if e.ErrorCode == events.ErrConfigInvalid {
		return // a refused reload of ship.json, not a turn
	}
	at := time.UnixMilli(e.Timestamp).Unix() / 60
	a.mu.Lock()
	defer a.mu.Unlock()
	m := &a.minutes[at%60]
	if m.at != at {
		*m = minute{at: at}
	}
	m.turns++
	if e.Type == events.TypeError {
		m.errors++
	}
}

// lastHour returns the runs that ended in the last 60 minutes and how
// many of them failed.
func (a *activity) lastHour() (turns, errs int) {
	now := a.now().Unix() / 60
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, m := range a.minutes {
		if m.at > now-60 && m.at <= now {
			turns += m.turns
			errs += m.errors
		}
	}
	return turns, errs
}

func (a *activity) close() {
	select {
	case <-a.stop:
	default:
		close(a.stop)
	}
	<-a.done
}
