package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/shipmyagent/ship/runtime/records"
)

// errNoChange ends a records.Update whose change has nothing to write.
var errNoChange = errors.New("nothing to change")

// endedBudget bounds recording how a run ended: the outcome arrives
// without a context, and a run's result must not wait on JetStream for
// ever.
const endedBudget = 30 * time.Second

// recordVersion is the version of a task's shared record ("v"). Replicas
// of two versions run side by side during a rolling upgrade: each keeps
// the fields it does not know when it rewrites a record.
const recordVersion = 1

// record is a task's shared record: its TaskState, the version, and the
// fields a newer version wrote, kept as found.
type record struct {
	TaskState
	extra map[string]json.RawMessage
}

// recordFields are the fields of a shared record this version knows.
var recordFields = []string{"v", "lastSlot", "lastRun", "lastRunId", "lastStatus", "lastResult", "lastEnded"}

// decodeRecord reads a shared record.
func decodeRecord(b []byte) (record, error) {
	var r record
	if err := json.Unmarshal(b, &r.TaskState); err != nil {
		return r, err
	}
	extra, err := records.UnknownFields(b, recordFields...)
	r.extra = extra
	return r, err
}

// encode writes the record with this version's "v" and the kept fields.
func (r record) encode() ([]byte, error) {
	b, err := json.Marshal(struct {
		V int `json:"v"`
		TaskState
	}{recordVersion, r.TaskState})
	if err != nil {
		return nil, err
	}
	return records.WithUnknown(b, r.extra)
}

// readShared reads every task's record (cluster mode).
func (s *Scheduler) readShared(ctx context.Context) (state, error) {
	st, damaged, err := readSharedState(ctx, s.shared)
	for _, name := range damaged {
		// Without its record the slot looks free, but taking it reads the
		// record again and fails the same way: it never runs.
		s.log.Error().Str("task", name).Msg("scheduled tasks: a shared task record is damaged")
	}
	return st, err
}

// readSharedState reads every task's record from t; damaged names the
// records that do not decode (left out).
func readSharedState(ctx context.Context, t records.Table) (st state, damaged []string, err error) {
	recs, err := t.List(ctx)
	if err != nil {
		return newState(), nil, fmt.Errorf("reading the shared task records: %w", err)
	}
	st = newState()
	for _, r := range recs {
		rec, err := decodeRecord(r.Value)
		if err != nil {
			damaged = append(damaged, r.Key)
			continue
		}
		st.Tasks[r.Key] = rec.TaskState
	}
	return st, damaged, nil
}

// ListShared is List in cluster mode: the folder's tasks with the runs the
// replicas share in t, whichever replica ran them.
func ListShared(ctx context.Context, dir string, t records.Table, now time.Time, local *time.Location) ([]Status, error) {
	entries, err := Folder{Dir: dir}.Read()
	if err != nil {
		return nil, err
	}
	st, _, err := readSharedState(ctx, t)
	if err != nil {
		return nil, err
	}
	return statuses(entries, st, now, local), nil
}

// update changes task name's bookkeeping: change gets the latest (ok
// false when there is none) and returns the new one, or false to leave it
// as it is. It returns whether it wrote. Alone it rewrites state.json; in
// cluster mode it is a compare-and-swap on the task's shared record, so
// change always decides on what the last writer, on any replica, wrote.
func (s *Scheduler) update(ctx context.Context, name string, change func(ts TaskState, ok bool) (TaskState, bool)) (bool, error) {
	if s.shared == nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		if err := s.loadLocked(s.clock.Now()); err != nil {
			return false, err
		}
		ts, ok := s.st.Tasks[name]
		next, write := change(ts, ok)
		if !write {
			return false, nil
		}
		return true, s.setLocked(name, next)
	}
	var next TaskState
	err := records.Update(ctx, s.shared, name, func(old []byte, exists bool) ([]byte, bool, error) {
		var rec record
		if exists {
			var err error
			if rec, err = decodeRecord(old); err != nil {
				return nil, false, fmt.Errorf("the shared record of task %s is damaged: %w", name, err)
			}
		}
		n, write := change(rec.TaskState, exists)
		if !write {
			return nil, false, errNoChange
		}
		rec.TaskState, next = n, n
		data, err := rec.encode()
		return data, false, err
	})
	if errors.Is(err, errNoChange) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("recording task %s: %w", name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tasks := maps.Clone(s.st.Tasks)
	if tasks == nil {
		tasks = map[string]TaskState{}
	}
	tasks[name] = next
	s.st = state{V: stateVersion, Tasks: tasks}
	return true, nil
}
