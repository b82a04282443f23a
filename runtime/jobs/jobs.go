// Package jobs runs work that outlives a turn: a tool call started in the
// background (exec_shell with background: true) runs here, outside the run
// that asked for it, so the chat goes on. Each job is recorded in a small
// state file when it starts and when it ends; a job still recorded as
// running when ship starts again was interrupted, and is reported once,
// never re-run.
package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/statefile"
	"github.com/shipmyagent/ship/runtime/turn"
)

// State is where a job is in its life.
type State string

// The states of a job; every state but Running is final.
const (
	Running     State = "running"
	Done        State = "done"
	Failed      State = "failed"
	Cancelled   State = "cancelled"
	Interrupted State = "interrupted"
)

// Defaults of Options.
const (
	DefaultPerChat     = 3
	DefaultMax         = 10
	DefaultMaxDuration = 30 * time.Minute
)

// keepFinished bounds how many finished jobs the state file keeps, so it
// stays small however long ship runs.
const keepFinished = 50

// Errors of Start and Cancel; their text is for the model or the person.
var (
	ErrChatLimit   = errors.New("too many background jobs in this chat")
	ErrGlobalLimit = errors.New("too many background jobs running")
	ErrUnknown     = errors.New("no such job in this chat")
	ErrNotRunning  = errors.New("the job is not running")
	ErrClosed      = errors.New("ship is stopping")
)

// Job is one background job as recorded.
type Job struct {
	ID       string     `json:"id"`
	ChatKey  string     `json:"chatKey"`
	Route    turn.Route `json:"route"`
	Identity string     `json:"identity,omitempty"`
	Tool     string     `json:"tool"`
	// Label shows the call in one line: "exec_shell `make test`".
	Label   string    `json:"label"`
	State   State     `json:"state"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended,omitzero"`
	// ExitCode is the command's exit code once it ended (-1 when none).
	ExitCode int `json:"exitCode"`
	// CancelledBy names who cancelled it.
	CancelledBy string `json:"cancelledBy,omitempty"`
	// Reported says an interrupted job's chat was told.
	Reported bool `json:"reported,omitempty"`
	// Lease is the job's lease (lease.go); nil in records from before
	// leases.
	Lease *Lease `json:"lease,omitempty"`
}

// Duration is how long the job ran (until now while it runs).
func (j Job) Duration(now time.Time) time.Duration {
	if j.Ended.IsZero() {
		return now.Sub(j.Started)
	}
	return j.Ended.Sub(j.Started)
}

// Result is how a job's work ended, as its runner reports it.
type Result struct {
	OK       bool
	ExitCode int
	// Content is what the tool would have answered (already redacted).
	Content string
}

// Spec is a job to start.
type Spec struct {
	ChatKey  string
	Route    turn.Route
	Identity string
	Tool     string
	Label    string
}

// Hooks are told of each job's start and end. Ended is called once per job
// that ends while ship runs (not for jobs cut short by Close).
type Hooks struct {
	Started func(Job)
	Ended   func(Job, Result)
}

// Options configure a Manager.
type Options struct {
	// Path is the state file (<project>/.ship/jobs.json); "" keeps jobs
	// in memory only.
	Path string
	// PerChat and Max bound the running jobs of one chat and of all
	// chats (defaults 3 and 10).
	PerChat, Max int
	// MaxDuration is every job's timeout (default 30 min).
	MaxDuration time.Duration
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
	// Logger hears of a job's end that could not be recorded.
	Logger zerolog.Logger
}

type entry struct {
	job    Job
	cancel context.CancelFunc
}

// Manager runs and records background jobs. It is safe for concurrent use.
type Manager struct {
	opts   Options
	base   context.Context
	stop   context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	jobs   map[string]*entry
	next   int
	closed bool
	hooks  Hooks
}

type file struct {
	Next int   `json:"next"`
	Jobs []Job `json:"jobs"`
}

// Open loads the state file (a missing one is empty) and marks every job
// recorded as running as interrupted: ship stopped while it ran.
func Open(opts Options) (*Manager, error) {
	opts.PerChat, opts.Max, opts.MaxDuration = limits(opts.PerChat, opts.Max, opts.MaxDuration)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	base, stop := context.WithCancel(context.Background())
	m := &Manager{opts: opts, base: base, stop: stop, jobs: map[string]*entry{}, next: 1}
	if opts.Path == "" {
		return m, nil
	}
	data, err := os.ReadFile(opts.Path)
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		stop()
		return nil, fmt.Errorf("reading the jobs file: %w", err)
	}
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		stop()
		return nil, fmt.Errorf("reading the jobs file %s: %w", opts.Path, err)
	}
	m.next = max(f.Next, 1)
	changed := false
	for _, j := range f.Jobs {
		if j.State == Running {
			j.State, j.ExitCode, changed = Interrupted, -1, true
		}
		m.jobs[j.ID] = &entry{job: j}
	}
	if changed {
		if err := m.saveLocked(); err != nil {
			stop()
			return nil, err
		}
	}
	return m, nil
}

// limits fills in the defaults of the limits left at zero.
func limits(perChat, all int, maxDuration time.Duration) (int, int, time.Duration) {
	if perChat <= 0 {
		perChat = DefaultPerChat
	}
	if all <= 0 {
		all = DefaultMax
	}
	if maxDuration <= 0 {
		maxDuration = DefaultMaxDuration
	}
	return perChat, all, maxDuration
}

// SetLimits changes the limits (a configuration reload; zero is the
// default): the next Start is held to them. Running jobs keep their
// timeout, and a lower limit stops none of them.
func (m *Manager) SetLimits(perChat, max int, maxDuration time.Duration) {
	perChat, max, maxDuration = limits(perChat, max, maxDuration)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.opts.PerChat, m.opts.Max, m.opts.MaxDuration = perChat, max, maxDuration
}

// MaxDuration is the timeout of every job.
func (m *Manager) MaxDuration() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.opts.MaxDuration
}

// SetHooks sets who is told of jobs starting and ending; the engine sets
// them once, before any job starts.
func (m *Manager) SetHooks(h Hooks) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hooks = h
}

// Start records and starts a job that runs run(ctx) in the background;
// ctx ends when the job is cancelled, times out (timeout, at most
// MaxDuration; zero is MaxDuration) or ship stops. Over a limit it starts
// nothing and returns ErrChatLimit or ErrGlobalLimit.
func (m *Manager) Start(spec Spec, timeout time.Duration, run func(ctx context.Context) Result) (Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if timeout <= 0 || timeout > m.opts.MaxDuration {
		timeout = m.opts.MaxDuration
	}
	if m.closed {
		return Job{}, ErrClosed
	}
	all, chat := 0, 0
	for _, e := range m.jobs {
		if e.job.State == Running {
			all++
			if e.job.ChatKey == spec.ChatKey {
				chat++
			}
		}
	}
	switch {
	case chat >= m.opts.PerChat:
		return Job{}, fmt.Errorf("%w (%d running, at most %d)", ErrChatLimit, chat, m.opts.PerChat)
	case all >= m.opts.Max:
		return Job{}, fmt.Errorf("%w (%d running, at most %d)", ErrGlobalLimit, all, m.opts.Max)
	}
	j := Job{ID: "J" + strconv.Itoa(m.next), ChatKey: spec.ChatKey, Route: spec.Route, Identity: spec.Identity,
		Tool: spec.Tool, Label: spec.Label, State: Running, Started: m.opts.Now(), ExitCode: -1}
	j.Lease = newLease(j.Started, timeout)
	m.next++
	ctx, cancel := context.WithTimeout(m.base, timeout)
	e := &entry{job: j, cancel: cancel}
	m.jobs[j.ID] = e
	if err := m.saveLocked(); err != nil {
		// Not recorded: it could not be reported after a crash, so it
		// does not run.
		delete(m.jobs, j.ID)
		m.next--
		cancel()
		return Job{}, err
	}
	hooks := m.hooks
	m.wg.Add(1)
	go m.run(ctx, cancel, e, run)
	if hooks.Started != nil {
		hooks.Started(j)
	}
	return j, nil
}

func (m *Manager) run(ctx context.Context, cancel context.CancelFunc, e *entry, run func(context.Context) Result) {
	defer m.wg.Done()
	defer cancel()
	res := run(ctx)
	m.mu.Lock()
	if m.closed && e.job.State == Running {
		// Ship is stopping: the record stays "running", and the next
		// start reports the job as interrupted.
		m.mu.Unlock()
		return
	}
	j := &e.job
	j.Ended = m.opts.Now()
	j.ExitCode = res.ExitCode
	switch {
	case j.State == Cancelled:
	case leaseRanOut(ctx) && j.Lease != nil:
		// Whatever the work made of its cancelled context, it was
		// reclaimed: it failed.
		l := *j.Lease
		l.Expired = true
		j.Lease, j.State = &l, Failed
	case res.OK:
		j.State = Done
	default:
		j.State = Failed
	}
	if err := m.saveLocked(); err != nil {
		// The job is over either way; after a restart it shows as
		// interrupted.
		m.opts.Logger.Error().Err(err).Str("job", j.ID).Msg("recording the end of a background job")
	}
	hooks, done := m.hooks, *j
	m.mu.Unlock()
	if hooks.Ended != nil {
		hooks.Ended(done, res)
	}
}

// Cancel stops a running job of chatKey ("" for any chat: the console),
// killing what it runs. The job then ends as cancelled.
func (m *Manager) Cancel(chatKey, id, by string) (Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.jobs[NormID(id)]
	if !ok || (chatKey != "" && e.job.ChatKey != chatKey) {
		return Job{}, ErrUnknown
	}
	if e.job.State != Running {
		return e.job, ErrNotRunning
	}
	e.job.State, e.job.CancelledBy = Cancelled, by
	e.cancel()
	return e.job, nil
}

// NormID is a job id as the manager looks it up: upper case, without the
// white space around it. Whoever checks rights on an id before Cancel
// compares this form with Job.ID.
func NormID(id string) string { return strings.ToUpper(strings.TrimSpace(id)) }

// List returns the jobs of chatKey ("" for all), newest first.
func (m *Manager) List(chatKey string) []Job {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Job
	for _, e := range m.jobs {
		if chatKey == "" || e.job.ChatKey == chatKey {
			out = append(out, e.job)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Started.After(out[b].Started) })
	return out
}

// Running is how many jobs are running now.
func (m *Manager) Running() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, e := range m.jobs {
		if e.job.State == Running {
			n++
		}
	}
	return n
}

// Unreported returns the interrupted jobs whose chats were not told yet.
func (m *Manager) Unreported() []Job {
	var out []Job
	for _, j := range m.List("") {
		if j.State == Interrupted && !j.Reported {
			out = append(out, j)
		}
	}
	return out
}

// MarkReported records that an interrupted job's chat was told, so it is
// told only once.
func (m *Manager) MarkReported(id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.jobs[id]; ok {
		e.job.Reported = true
	}
	return m.saveLocked()
}

// Close stops every running job (their records stay "running", so the
// next start reports them as interrupted) and waits for them.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.stop()
	m.wg.Wait()
}

// saveLocked writes the state file; m.mu is held.
func (m *Manager) saveLocked() error {
	if m.opts.Path == "" {
		return nil
	}
	var running, finished []Job
	for _, e := range m.jobs {
		if e.job.State == Running || (e.job.State == Interrupted && !e.job.Reported) {
			running = append(running, e.job)
		} else {
			finished = append(finished, e.job)
		}
	}
	sort.Slice(finished, func(a, b int) bool { return finished[a].Started.After(finished[b].Started) })
	for _, j := range finished[min(len(finished), keepFinished):] {
		delete(m.jobs, j.ID)
	}
	finished = finished[:min(len(finished), keepFinished)]
	data, err := json.MarshalIndent(file{Next: m.next, Jobs: append(running, finished...)}, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the jobs file: %w", err)
	}
	if err := statefile.Write(m.opts.Path, data); err != nil {
		return fmt.Errorf("saving the jobs file: %w", err)
	}
	return nil
}
