// Package usage keeps what the model cost: tokens (input, cached input,
// output) per UTC day, per chat and per person, in one small state file a
// day (.ship/usage/2026-11-26.json) rewritten after every turn, and checks the optional
// daily token budgets against it before a turn is taken.
package usage

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/shipmyagent/ship/runtime/records"
	"github.com/shipmyagent/ship/runtime/statefile"
)

// Counts are the tokens of some turns.
type Counts struct {
	// Input counts every prompt token, the cached ones included;
	// CachedInput is the part of Input the provider read from its prompt
	// cache (billed cheaper).
	Input       int64 `json:"input"`
	CachedInput int64 `json:"cachedInput"`
	Output      int64 `json:"output"`
	Turns       int64 `json:"turns"`
}

// Total is what a budget counts: input (cached or not) plus output.
func (c Counts) Total() int64 { return c.Input + c.Output }

func (c *Counts) add(o Counts) {
	c.Input += o.Input
	c.CachedInput += o.CachedInput
	c.Output += o.Output
	c.Turns += o.Turns
}

// Day is one UTC day's counters: the file <dir>/<day>.json.
type Day struct {
	V      int               `json:"v"`
	Total  Counts            `json:"total"`
	Chats  map[string]Counts `json:"chats"`
	People map[string]Counts `json:"people"`
}

func newDay() *Day { return &Day{V: 1, Chats: map[string]Counts{}, People: map[string]Counts{}} }

// KeepDays is how many days' files are kept: a month of history for
// `ship usage --day`; older ones are removed when a day begins.
const KeepDays = 31

// dayLayout names a day in file names and on the API ("2026-11-26", UTC).
const dayLayout = "2006-01-02"

// DayOf is the UTC day t falls in, as the files name it.
func DayOf(t time.Time) string { return t.UTC().Format(dayLayout) }

// ResetAt is when the budget window that holds t ends: the next 00:00 UTC.
func ResetAt(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
}

// Tally is today's aggregate, kept in memory and written to today's file
// after every turn: one small file a day, so a turn rewrites only the
// day's counters however long ship has run. It is safe for concurrent use.
type Tally struct {
	dir string
	now func() time.Time

	// writeMu keeps the file's writes in the order of their snapshots,
	// without holding mu (which the front door's Check needs) during the
	// fsync.
	writeMu sync.Mutex
	mu      sync.Mutex
	today   string // the day d counts
	d       *Day
	// written is when today's file was last written; dirty says d holds
	// turns the file does not yet have (see Add).
	written time.Time
	dirty   bool

	// shared, in cluster mode, holds the day's counters of every replica
	// (see Share); nil alone.
	shared records.Table
}

// Open loads today's counters from dir (<project>/.ship/usage; "" keeps
// them in memory only); now is its clock (nil: time.Now), which decides
// the day a turn counts for.
func Open(dir string, now func() time.Time) (*Tally, error) {
	if now == nil {
		now = time.Now
	}
	t := &Tally{dir: dir, now: now}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.roll(); err != nil {
		return nil, err
	}
	return t, nil
}

// roll makes d today's counters, reading them when the day is new to
// this process (a restart, or 00:00 UTC), and removes files past
// KeepDays. Called with mu held.
func (t *Tally) roll() error {
	day := DayOf(t.now())
	if day == t.today {
		return nil
	}
	if t.dirty && t.dir != "" {
		// The day that ends keeps its last turns: written now, once.
		if b, err := json.Marshal(t.d); err == nil {
			if err := statefile.Write(filepath.Join(t.dir, t.today+".json"), b); err == nil {
				t.dirty = false
			}
		}
	}
	d, err := readDay(t.dir, day)
	if err != nil {
		return err
	}
	t.today, t.d = day, d
	t.prune(day)
	return nil
}

// readDay loads day's file from dir; a missing one (or no dir) is empty.
func readDay(dir, day string) (*Day, error) {
	d := newDay()
	if dir == "" {
		return d, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, day+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading token usage: %w", err)
	}
	if err := json.Unmarshal(b, d); err != nil {
		return nil, fmt.Errorf("reading token usage of %s: %w", day, err)
	}
	if d.Chats == nil {
		d.Chats = map[string]Counts{}
	}
	if d.People == nil {
		d.People = map[string]Counts{}
	}
	return d, nil
}

// prune removes the day files older than KeepDays before today; a file
// that cannot be removed is left for the next day to try.
func (t *Tally) prune(today string) {
	if t.dir == "" {
		return
	}
	names, _ := filepath.Glob(filepath.Join(t.dir, "????-??-??.json"))
	oldest := oldestKept(today)
	for _, n := range names {
		if day := strings.TrimSuffix(filepath.Base(n), ".json"); day < oldest {
			_ = os.Remove(n)
		}
	}
}

// oldestKept is the oldest of the KeepDays days kept on today.
func oldestKept(today string) string {
	start, _ := time.Parse(dayLayout, today)
	return DayOf(start.AddDate(0, 0, -(KeepDays - 1)))
}

// FlushEvery bounds how often today's file is written: a turn costs a
// map update, not two fsyncs. A crash loses at most this much of the
// counts (each run's tokens are also in its chat's log); Close writes the
// rest.
const FlushEvery = 2 * time.Second

// Add counts one turn of chatKey asked by person (a policy identity,
// "telegram:42"; "" when nobody is known) for today, and writes today's
// file when it was last written FlushEvery ago or more. A turn that
// reported no tokens still counts as a turn. In cluster mode the shared
// counters are updated at once: budgets are read from them.
func (t *Tally) Add(ctx context.Context, chatKey, person string, c Counts) error {
	c.Turns = 1
	if t.shared != nil {
		if err := t.addShared(ctx, DayOf(t.now()), chatKey, person, c); err != nil {
			return err
		}
	}
	t.mu.Lock()
	if err := t.roll(); err != nil {
		t.mu.Unlock()
		return err
	}
	d := t.d
	d.Total.add(c)
	addTo(d.Chats, chatKey, c)
	addTo(d.People, person, c)
	t.dirty = true
	due := t.now().Sub(t.written) >= FlushEvery
	t.mu.Unlock()
	if !due {
		return nil
	}
	return t.Flush()
}

// Flush writes today's counters to their file if it lacks some turns.
func (t *Tally) Flush() error {
	t.writeMu.Lock()
	defer t.writeMu.Unlock()
	t.mu.Lock()
	if !t.dirty || t.dir == "" {
		t.dirty = false
		t.mu.Unlock()
		return nil
	}
	day := t.today
	b, err := json.Marshal(t.d)
	t.dirty, t.written = false, t.now()
	t.mu.Unlock()
	if err != nil {
		return fmt.Errorf("encoding token usage: %w", err)
	}
	if err := statefile.Write(filepath.Join(t.dir, day+".json"), b); err != nil {
		t.mu.Lock()
		t.dirty = true // the next Add or Close tries again
		t.mu.Unlock()
		return fmt.Errorf("saving token usage: %w", err)
	}
	return nil
}

// Close writes what today's file does not have yet.
func (t *Tally) Close() error { return t.Flush() }

func addTo(m map[string]Counts, key string, c Counts) {
	if key == "" {
		return
	}
	v := m[key]
	v.add(c)
	m[key] = v
}

// Today is what chatKey and person used today (across the cluster, in
// cluster mode). When a new day's file, or the shared counters, cannot be
// read, nothing counts as used (no turn is refused for it) and the next
// Add reports the error.
func (t *Tally) Today(ctx context.Context, chatKey, person string) (chat, who Counts) {
	if t.shared != nil {
		chat, who, err := t.todayShared(ctx, DayOf(t.now()), chatKey, person)
		if err != nil {
			return Counts{}, Counts{}
		}
		return chat, who
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.roll() != nil {
		return Counts{}, Counts{}
	}
	return t.d.Chats[chatKey], t.d.People[person]
}

// Report is one day's usage as /api/status and `ship usage` show it.
type Report struct {
	Day string `json:"day"`
	// ResetsAt is when the day's budgets reset (RFC 3339, UTC).
	ResetsAt string `json:"resetsAt"`
	Total    Counts `json:"total"`
	// Chats and People are the day's biggest users, most tokens first, at
	// most the number asked for; ChatCount and PeopleCount say how many
	// there were in all.
	Chats       []Row `json:"chats"`
	People      []Row `json:"people"`
	ChatCount   int   `json:"chatCount"`
	PeopleCount int   `json:"peopleCount"`
}

// Row is one chat's or person's counters.
type Row struct {
	Key string `json:"key"`
	Counts
}

// Report is day's usage ("" for today) with its top chats and people; a
// past day is read from its file (in cluster mode, both from the shared
// counters).
func (t *Tally) Report(ctx context.Context, day string, top int) (Report, error) {
	if t.shared != nil {
		day, err := dayOrToday(day, t.now())
		if err != nil {
			return Report{}, err
		}
		d, err := t.dayShared(ctx, day)
		if err != nil {
			return Report{}, err
		}
		return report(day, d, top), nil
	}
	t.mu.Lock()
	if err := t.roll(); err != nil {
		t.mu.Unlock()
		return Report{}, err
	}
	if day == "" || day == t.today {
		defer t.mu.Unlock()
		return report(t.today, t.d, top), nil
	}
	t.mu.Unlock()
	return ReadReport(t.dir, day, t.now(), top)
}

// ReadReport is day's usage ("" for today, by now) from the files in dir,
// read without a running ship (`ship usage`).
func ReadReport(dir, day string, now time.Time, top int) (Report, error) {
	day, err := dayOrToday(day, now)
	if err != nil {
		return Report{}, err
	}
	d, err := readDay(dir, day)
	if err != nil {
		return Report{}, err
	}
	return report(day, d, top), nil
}

// dayOrToday is the day a report asks for: day, checked, or "" for the
// day now falls in.
func dayOrToday(day string, now time.Time) (string, error) {
	if day == "" {
		return DayOf(now), nil
	}
	if _, err := time.Parse(dayLayout, day); err != nil {
		return "", fmt.Errorf("reading the day %q: want YYYY-MM-DD: %w", day, err)
	}
	return day, nil
}

func report(day string, d *Day, top int) Report {
	start, _ := time.Parse(dayLayout, day)
	r := Report{Day: day, ResetsAt: ResetAt(start).Format(time.RFC3339), Chats: []Row{}, People: []Row{}}
	r.Total, r.ChatCount, r.PeopleCount = d.Total, len(d.Chats), len(d.People)
	r.Chats, r.People = topRows(d.Chats, top), topRows(d.People, top)
	return r
}

// topRows is m's n biggest entries, most tokens first (then by key, so the
// order is stable).
func topRows(m map[string]Counts, n int) []Row {
	rows := make([]Row, 0, len(m))
	for k, c := range m {
		rows = append(rows, Row{Key: k, Counts: c})
	}
	slices.SortFunc(rows, func(a, b Row) int {
		if c := cmp.Compare(b.Total(), a.Total()); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	if n >= 0 && len(rows) > n {
		rows = rows[:n]
	}
	return rows
}
