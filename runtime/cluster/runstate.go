package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/shipmyagent/ship/runtime/journal"
	"github.com/shipmyagent/ship/runtime/records"
)

// wireVersion is the version of what replicas hand each other: queue
// items, run state, outcomes and events carry it as "v". A replica keeps
// the fields it does not know (a newer version's) when it rewrites a
// value, and otherwise ignores them, so two consecutive versions can run
// side by side during a rolling upgrade. A change an older replica could
// not ignore safely takes new subject and bucket names instead.
const wireVersion = 1

// runState is what a run records as it goes (journal.Item's counters),
// kept in the ship_runs bucket under the item's id.
//
// It is fenced: Lease is the partition lease's revision (lease.taken) of
// the replica that wrote it, and every write names the record's revision
// as that replica last saw it. A replica whose write finds a newer lease
// there stops: another holder runs the item now (journal.ErrFenced). A
// holder that finds an older lease's write takes it into account (a send
// intent recorded meanwhile means the run must not start:
// journal.ErrInDoubt) and writes over it.
type runState struct {
	V        int      `json:"v"`
	Attempts int      `json:"attempts,omitempty"`
	Sends    int      `json:"sends,omitempty"`
	Streamed []string `json:"streamed,omitempty"`
	Lease    uint64   `json:"lease,omitempty"`
	Holder   string   `json:"holder,omitempty"` // replica/boot, to tell one's own write
	// extra holds the fields a newer version wrote, written back as found.
	extra map[string]json.RawMessage
}

// runStateFields are the fields this version of runState knows.
var runStateFields = []string{"v", "attempts", "sends", "streamed", "lease", "holder"}

// UnmarshalJSON keeps the fields this version does not know.
func (s *runState) UnmarshalJSON(b []byte) error {
	type plain runState
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	extra, err := records.UnknownFields(b, runStateFields...)
	if err != nil {
		return err
	}
	*s = runState(p)
	s.extra = extra
	return nil
}

// MarshalJSON writes the known fields and the kept ones.
func (s runState) MarshalJSON() ([]byte, error) {
	type plain runState
	b, err := json.Marshal(plain(s))
	if err != nil {
		return nil, err
	}
	return records.WithUnknown(b, s.extra)
}

// readRunState reads an item's run state from the stream leader into fl,
// retrying until it succeeds or ctx (the partition's) ends: guessing
// "no state" after an error could run again an item whose reply went out.
// A record that cannot be decoded counts as a send intent (in doubt).
func (q *Queue) readRunState(ctx context.Context, id string, fl *inflight) error {
	v, err := q.runStateOf(ctx, id)
	if err != nil {
		return err
	}
	fl.rev = v.rev
	if v.rev == 0 {
		return nil
	}
	if err := json.Unmarshal(v.data, &fl.state); err != nil {
		q.n.log.Error().Err(err).Str("requestId", id).Msg("a run's state cannot be read; treating the message as possibly answered")
		fl.state = runState{Sends: 1}
	}
	return nil
}

// runStateOf reads an item's run state record from the stream leader,
// retrying until ctx ends; a zero kvValue (rev 0) means there is none.
func (q *Queue) runStateOf(ctx context.Context, id string) (kvValue, error) {
	var v kvValue
	err := retry(ctx, q.n.log, "reading a run's state", func(ctx context.Context) error {
		var err error
		v, err = q.n.leaderGet(ctx, bucketRuns, token(id))
		if errors.Is(err, errNoValue) {
			v = kvValue{}
			return nil
		}
		return err
	})
	return v, err
}

// Start implements journal.Recorder.
func (q *Queue) Start(id string) error {
	return q.record(id, true, func(s *runState) { s.Attempts++ })
}

// Sending implements journal.Recorder: the intent is stored on the
// stream's replicas before the reply goes out, and refused (so the reply
// does not go) when the run is no longer this replica's.
func (q *Queue) Sending(id string) error {
	return q.record(id, false, func(s *runState) { s.Sends++; s.Streamed = nil })
}

// Streaming implements journal.Recorder.
func (q *Queue) Streaming(id string, visible []string) error {
	return q.record(id, false, func(s *runState) { s.Streamed = visible })
}

// record applies change to an item's run state under the fence (see
// runState). starting says this is the run's first write here, which must
// not overlook a send intent an earlier holder recorded after hand-over.
func (q *Queue) record(id string, starting bool, change func(*runState)) error {
	q.mu.Lock()
	fl, ok := q.items[id]
	if !ok {
		q.mu.Unlock()
		return nil // not a shared item
	}
	if fl.fenced {
		q.mu.Unlock()
		return journal.ErrFenced
	}
	l := fl.part.lease
	base, rev := fl.state, fl.rev
	q.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	holder := q.n.opts.Replica + "/" + q.n.boot
	for attempt := 0; ; attempt++ {
		if !l.held() {
			return q.fence(id, fl, "its partition's lease lapsed here")
		}
		next := base
		next.Streamed = append([]string(nil), base.Streamed...)
		change(&next)
		next.V, next.Lease, next.Holder = wireVersion, l.taken, holder
		b, err := json.Marshal(next)
		if err != nil {
			return fmt.Errorf("encoding a run's state: %w", err)
		}
		var nrev uint64
		err = retry(ctx, q.n.log, "recording a run's state", func(ctx context.Context) error {
			var err error
			if rev == 0 {
				nrev, err = q.n.runs.Create(ctx, token(id), b)
			} else {
				nrev, err = q.n.runs.Update(ctx, token(id), b, rev)
			}
			if isConflict(err) {
				return permanent{err}
			}
			return err
		})
		if err == nil {
			q.mu.Lock()
			fl.state, fl.rev = next, nrev
			q.mu.Unlock()
			return nil
		}
		if !isConflict(err) {
			return err
		}
		// Someone wrote since this replica read: find out who.
		cur, err := q.runStateOf(ctx, id)
		if err != nil {
			return err
		}
		var found runState
		if cur.rev != 0 {
			if err := json.Unmarshal(cur.data, &found); err != nil {
				return q.fence(id, fl, "its run state cannot be read")
			}
		}
		switch {
		case cur.rev != 0 && bytes.Equal(cur.data, b):
			// This replica's own write, whose answer was lost and retried.
			q.mu.Lock()
			fl.state, fl.rev = next, cur.rev
			q.mu.Unlock()
			return nil
		case cur.rev == 0 && rev != 0:
			// Deleted: the holder after this one settled the item.
			return q.fence(id, fl, "another replica settled it")
		case found.Lease > l.taken:
			return q.fence(id, fl, "another replica took its partition")
		case found.Sends > base.Sends && (starting || found.Holder != holder):
			// An earlier holder, still running, recorded a send intent
			// after this replica read the state: its reply may be out.
			q.mu.Lock()
			fl.state, fl.rev = found, cur.rev
			q.mu.Unlock()
			return journal.ErrInDoubt
		case attempt >= 10:
			return fmt.Errorf("recording a run's state: %w", errors.New("it keeps changing under this replica"))
		}
		// An earlier holder's write (streamed ids, an attempt): build on it.
		base, rev = found, cur.rev
		if !starting {
			// The streamed ids are this run's own, not the earlier holder's.
			base.Streamed = fl.state.Streamed
		}
	}
}

// fence marks an item as another replica's: this one sends nothing more.
func (q *Queue) fence(id string, fl *inflight, why string) error {
	q.mu.Lock()
	fl.fenced = true
	q.mu.Unlock()
	q.n.log.Warn().Str("requestId", id).Str("why", why).Msg("fenced: another replica runs this message now; nothing more is sent from here")
	return journal.ErrFenced
}

// Done implements journal.Recorder: the item leaves the stream, then its
// run state goes. In that order: a crash in between leaves only state
// nobody reads, never an item that could run again without its send
// intents. A fenced item is only forgotten: it is the new holder's.
func (q *Queue) Done(id string) error {
	fl, ok := q.forget(id)
	if !ok || fl.fenced {
		return nil
	}
	if err := q.deleteMsg(fl.seq); err != nil {
		return err
	}
	if fl.rev != 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := q.n.runs.Delete(ctx, token(id), jetstream.LastRevision(fl.rev)); err != nil {
			q.n.log.Debug().Err(err).Str("requestId", id).Msg("removing a run's state; it expires by itself")
		}
	}
	return nil
}

func (q *Queue) deleteMsg(seq uint64) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := retry(ctx, q.n.log, "removing a done item from the queue", func(ctx context.Context) error {
		err := q.n.queue.DeleteMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("removing item %d from the queue: %w", seq, err)
	}
	return nil
}
