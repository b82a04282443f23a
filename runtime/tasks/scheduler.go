package tasks

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/records"
)

// Submitter queues a run on the global queue: the engine's front door
// (ingress.Ingress.Submit), which logs the user entry, journals it and
// queues it.
type Submitter interface {
	Submit(ctx context.Context, s ingress.Submission) (ingress.Ticket, error)
}

// History reads the chat logs (the engine's Recent and Scan): a task's
// replies take the route of the latest message its chat sent.
type History interface {
	Recent(ctx context.Context, chatKey string, n int) ([]chat.ChatLogEntryV1, error)
	Scan(ctx context.Context, chatKey string, fn func(chat.ChatLogEntryV1) bool) error
}

// Dispatchers finds a channel's dispatcher (the engine's Lookup, which
// asks its dispatch.Registry): a task's replies reach its chat the way the chat's
// platform says (dispatch.TaskRoute), and a refused one is explained by the
// platform's rule (dispatch.ReplyWindowHint), so the scheduler needs to
// know no platform itself.
type Dispatchers interface {
	Lookup(channel string) (dispatch.Dispatcher, bool)
}

// Clock is the scheduler's time; tests drive one by hand.
type Clock interface {
	Now() time.Time
	// At returns a channel that receives once the clock reads t or later
	// (at once when t has passed).
	At(t time.Time) <-chan time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time                  { return time.Now() }
func (systemClock) At(t time.Time) <-chan time.Time { return time.After(time.Until(t)) }

// DefaultPoll is how often the scheduler looks at the task folder when no
// slot comes sooner: a new or edited task is seen within it.
const DefaultPoll = 10 * time.Second

// Options configure a Scheduler.
type Options struct {
	// Dir is the task folder (<project>/.ship/tasks).
	Dir       string
	Submitter Submitter
	History   History
	// Dispatchers are the platforms' dispatchers, asked how a task's
	// replies reach a chat.
	Dispatchers Dispatchers
	// Clock is the system clock when nil.
	Clock Clock
	// Local is the zone of tasks that name none; nil is time.Local.
	Local *time.Location
	// Poll bounds the wait between passes; 0 is DefaultPoll.
	Poll time.Duration
	// Records, when set, keeps each task's bookkeeping there, one record
	// per task, instead of state.json (cluster mode): the scheduler that
	// holds the lease after another reads the slots that one took, and
	// every replica lists the same last runs.
	Records records.Table
	Logger  zerolog.Logger
}

// Scheduler runs each task once per slot of its schedule. It reads the
// folder on every pass (a stat per file; a changed file is parsed again),
// and keeps state.json (in cluster mode, a shared record per task): a slot
// is recorded as taken before its run is queued, so no slot runs twice,
// whatever stops ship when, and whichever replica holds the scheduler.
type Scheduler struct {
	folder Folder
	sub    Submitter
	hist   History
	disp   Dispatchers
	clock  Clock
	local  *time.Location
	poll   time.Duration
	log    zerolog.Logger
	runs   atomic.Uint64 // numbers runs started by hand
	shared records.Table // nil: state.json

	mu     sync.Mutex
	loaded bool
	st     state
	// floor is a time no slot at or before runs: set when state.json was
	// damaged, so that losing the bookkeeping never runs a slot twice.
	floor   time.Time
	entries map[string]cached
	passes  int
}

// cached is a task file as last read, with its schedule.
type cached struct {
	Entry
	sched Schedule
}

// New returns a Scheduler; it reads nothing until it runs, so start-up
// does not wait for the disk.
func New(opts Options) (*Scheduler, error) {
	if opts.Dir == "" || opts.Submitter == nil || opts.History == nil || opts.Dispatchers == nil {
		return nil, errors.New("tasks: Options.Dir, Submitter, History and Dispatchers are required")
	}
	s := &Scheduler{
		folder: Folder{Dir: opts.Dir}, sub: opts.Submitter, hist: opts.History, disp: opts.Dispatchers,
		clock: opts.Clock, local: opts.Local, poll: opts.Poll, shared: opts.Records,
		log:     opts.Logger.With().Str("component", "tasks").Logger(),
		entries: map[string]cached{},
	}
	if s.clock == nil {
		s.clock = systemClock{}
	}
	if s.local == nil {
		s.local = time.Local
	}
	if s.poll <= 0 {
		s.poll = DefaultPoll
	}
	return s, nil
}

// Run makes a pass at once, then one at every slot (and at least every
// Poll) until ctx ends.
func (s *Scheduler) Run(ctx context.Context) {
	for {
		next := s.Tick(ctx)
		wake := s.clock.Now().Add(s.poll)
		if !next.IsZero() && next.Before(wake) {
			wake = next
		}
		select {
		case <-ctx.Done():
			return
		case <-s.clock.At(wake):
		}
	}
}

// due is a slot to run.
type due struct {
	task Task
	slot time.Time
}

// Tick makes one pass: it reads the folder, queues a run of every task
// whose latest slot has not been taken, and returns the next slot of any
// task (zero when there is none). A task whose slots passed while ship was
// down runs once, for the latest of them.
func (s *Scheduler) Tick(ctx context.Context) time.Time {
	now := s.clock.Now()
	var shared state
	if s.shared != nil {
		// Another replica may have held the lease since the last pass:
		// its slots count. Taking a slot checks its record again.
		var err error
		if shared, err = s.readShared(ctx); err != nil {
			s.log.Error().Err(err).Msg("scheduled tasks: reading the bookkeeping; no task runs until it can be read")
			return time.Time{}
		}
	}
	s.mu.Lock()
	if s.shared != nil {
		s.st, s.loaded = shared, true
	}
	if err := s.loadLocked(now); err != nil {
		s.mu.Unlock()
		s.log.Error().Err(err).Msg("scheduled tasks: reading the bookkeeping; no task runs until it can be read")
		return time.Time{}
	}
	s.reloadLocked()
	var todo []due
	var next time.Time
	for _, name := range slices.Sorted(maps.Keys(s.entries)) {
		c := s.entries[name]
		if c.Err != nil || !c.Task.Enabled {
			continue
		}
		if latest := c.sched.Latest(now); !latest.IsZero() && latest.After(s.baselineLocked(c)) {
			todo = append(todo, due{task: c.Task, slot: latest})
		}
		if n := c.sched.Next(now); !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
	}
	first, count := s.passes == 0, len(s.entries)
	s.passes++
	s.mu.Unlock()
	for _, d := range todo {
		s.fire(ctx, d.task, d.slot, now)
	}
	if first {
		// After the first pass: a slot missed while ship was down is
		// queued by now.
		s.log.Info().Int("tasks", count).Str("dir", s.folder.Dir).Msg("scheduled tasks ready")
	}
	return next
}

// baselineLocked is the time after which a slot of c counts: the last slot
// taken, or the file's last change (a new or edited task does not catch
// up on slots from before it was written), whichever is later.
func (s *Scheduler) baselineLocked(c cached) time.Time {
	b := s.st.Tasks[c.Name].LastSlot
	if c.ModTime.After(b) {
		b = c.ModTime
	}
	if s.floor.After(b) {
		b = s.floor
	}
	return b
}

// loadLocked reads state.json once. Runs that were queued when ship last
// stopped without hearing their end are marked interrupted: the journal
// resumes them, but not their bookkeeping.
func (s *Scheduler) loadLocked(now time.Time) error {
	if s.loaded {
		return nil
	}
	st, err := readState(s.folder.statePath())
	if errors.Is(err, errCorruptState) {
		aside := fmt.Sprintf("%s.damaged-%d", s.folder.statePath(), now.Unix())
		if rerr := os.Rename(s.folder.statePath(), aside); rerr != nil {
			return errors.Join(err, fmt.Errorf("setting the damaged file aside: %w", rerr))
		}
		s.log.Error().Err(err).Str("file", aside).
			Msg("scheduled tasks: bookkeeping damaged and set aside; slots up to now are treated as taken, so none runs twice")
		s.floor = now
		st, err = newState(), nil
	}
	if err != nil {
		return err
	}
	s.st, s.loaded = st, true
	changed := false
	for name, ts := range s.st.Tasks {
		if ts.LastStatus == StatusStarted {
			ts.LastStatus = StatusInterrupted
			ts.LastResult = "ship stopped while this run was queued or running; at the next start it ran again from the journal, " +
				"unless its reply had begun (a reply is never sent twice)"
			s.st.Tasks[name] = ts
			changed = true
		}
	}
	if changed {
		if err := writeState(s.folder.statePath(), s.st); err != nil {
			s.log.Error().Err(err).Msg("scheduled tasks: recording interrupted runs")
		}
	}
	return nil
}

// reloadLocked brings the cached files up to date: a file whose size or
// modification time changed is read again; a removed one is dropped.
func (s *Scheduler) reloadLocked() {
	files, err := s.folder.list()
	if err != nil {
		s.log.Error().Err(err).Msg("scheduled tasks: reading the task folder")
		return
	}
	seen := make(map[string]bool, len(files))
	for _, tf := range files {
		seen[tf.name] = true
		if c, ok := s.entries[tf.name]; ok && c.size == tf.size && c.ModTime.Equal(tf.modTime) {
			continue
		}
		c := cached{Entry: s.folder.read(tf)}
		if c.Err == nil {
			c.sched, c.Err = c.Task.Schedule(s.local)
		}
		switch {
		case c.Err != nil:
			s.log.Error().Str("task", tf.name).Err(c.Err).Msg("task file invalid: this task does not run until it is fixed")
		case c.sched.NeverFires(s.clock.Now()) != "":
			// Valid, so not refused, but a task that silently never runs
			// is what the operator needs to hear about.
			s.log.Warn().Str("task", tf.name).Str("cron", c.Task.Cron).Str("chatKey", c.Task.ChatKey).Bool("enabled", c.Task.Enabled).
				Str("warning", c.sched.NeverFires(s.clock.Now())).Msg("task loaded, but its schedule never fires")
		default:
			s.log.Info().Str("task", tf.name).Str("cron", c.Task.Cron).Str("chatKey", c.Task.ChatKey).Bool("enabled", c.Task.Enabled).Msg("task loaded")
		}
		s.entries[tf.name] = c
	}
	for name := range s.entries {
		if !seen[name] {
			delete(s.entries, name)
			s.log.Info().Str("task", name).Msg("task removed")
		}
	}
}

// List is every task with its next slot and latest run, sorted by name.
// In cluster mode the runs are the shared records, read now: every
// replica lists the same, whichever holds the scheduler.
func (s *Scheduler) List(ctx context.Context) ([]Status, error) {
	now := s.clock.Now()
	var shared state
	if s.shared != nil {
		var err error
		if shared, err = s.readShared(ctx); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := shared
	if s.shared == nil {
		if err := s.loadLocked(now); err != nil {
			return nil, err
		}
		st = s.st
	}
	s.reloadLocked()
	entries := make([]Entry, 0, len(s.entries))
	for _, c := range s.entries {
		entries = append(entries, c.Entry)
	}
	return statuses(entries, st, now, s.local), nil
}

// setLocked records ts for task name in state.json; on failure nothing
// changes, in memory either.
func (s *Scheduler) setLocked(name string, ts TaskState) error {
	next := state{V: stateVersion, Tasks: maps.Clone(s.st.Tasks)}
	next.Tasks[name] = ts
	if err := writeState(s.folder.statePath(), next); err != nil {
		return err
	}
	s.st = next
	return nil
}

// ended records how run id of task name ended, unless a later run has
// started since.
func (s *Scheduler) ended(name, id, status, result string) {
	ctx, cancel := context.WithTimeout(context.Background(), endedBudget)
	defer cancel()
	now := s.clock.Now()
	_, err := s.update(ctx, name, func(ts TaskState, ok bool) (TaskState, bool) {
		if !ok || ts.LastRunID != id {
			return ts, false
		}
		ts.LastStatus, ts.LastResult, ts.LastEnded = status, result, now
		return ts, true
	})
	if err != nil {
		s.log.Error().Err(err).Str("task", name).Str("requestId", id).Msg("scheduled tasks: recording a run's result")
	}
}
