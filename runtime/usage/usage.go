// Package usage keeps what the model cost: tokens (input, cached input,
// output) per UTC day, per chat and per person, in a small state file
// (.ship/usage.json) rewritten after every turn, and checks the optional
// daily token budgets against it before a turn is taken.
package usage

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sort"
	"sync"
	"time"

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

// Day is one UTC day's counters.
type Day struct {
	Total  Counts            `json:"total"`
	Chats  map[string]Counts `json:"chats"`
	People map[string]Counts `json:"people"`
}

// file is the state file's shape.
type file struct {
	V    int             `json:"v"`
	Days map[string]*Day `json:"days"`
}

// KeepDays is how many days the state file keeps: a month of history for
// `ship usage --day`, and a file that stays small.
const KeepDays = 31

// dayLayout names a day in the file and on the API ("2026-11-26", UTC).
const dayLayout = "2006-01-02"

// DayOf is the UTC day t falls in, as the file names it.
func DayOf(t time.Time) string { return t.UTC().Format(dayLayout) }

// ResetAt is when the budget window that holds t ends: the next 00:00 UTC.
func ResetAt(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
}

// Tally is the per-day aggregate. It is safe for concurrent use.
type Tally struct {
	path string
	now  func() time.Time

	mu   sync.Mutex
	days map[string]*Day
}

// Open loads the aggregate kept at path ("" keeps it in memory only); now
// is its clock (nil: time.Now), which decides the day a turn counts for.
func Open(path string, now func() time.Time) (*Tally, error) {
	if now == nil {
		now = time.Now
	}
	t := &Tally{path: path, now: now, days: map[string]*Day{}}
	if path == "" {
		return t, nil
	}
	f, err := read(path)
	if err != nil {
		return nil, err
	}
	t.days = f.Days
	return t, nil
}

// read loads a state file; a missing one is empty.
func read(path string) (file, error) {
	f := file{Days: map[string]*Day{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("reading token usage: %w", err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("reading token usage %s: %w", path, err)
	}
	if f.Days == nil {
		f.Days = map[string]*Day{}
	}
	return f, nil
}

// Now is the tally's clock.
func (t *Tally) Now() time.Time { return t.now() }

// Add counts one turn of chatKey asked by person (a policy identity,
// "telegram:42"; "" when nobody is known) for today, and writes the file.
// A turn that reported no tokens still counts as a turn.
func (t *Tally) Add(chatKey, person string, c Counts) error {
	c.Turns = 1
	t.mu.Lock()
	defer t.mu.Unlock()
	day := DayOf(t.now())
	d := t.days[day]
	if d == nil {
		d = &Day{Chats: map[string]Counts{}, People: map[string]Counts{}}
		t.days[day] = d
		t.prune()
	}
	d.Total.add(c)
	addTo(d.Chats, chatKey, c)
	addTo(d.People, person, c)
	if t.path == "" {
		return nil
	}
	b, err := json.Marshal(file{V: 1, Days: t.days})
	if err != nil {
		return fmt.Errorf("encoding token usage: %w", err)
	}
	if err := statefile.Write(t.path, b); err != nil {
		return fmt.Errorf("saving token usage: %w", err)
	}
	return nil
}

func addTo(m map[string]Counts, key string, c Counts) {
	if key == "" {
		return
	}
	v := m[key]
	v.add(c)
	m[key] = v
}

// prune drops the days past KeepDays (the newest are kept).
func (t *Tally) prune() {
	if len(t.days) <= KeepDays {
		return
	}
	names := make([]string, 0, len(t.days))
	for k := range t.days {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names[:len(names)-KeepDays] {
		delete(t.days, k)
	}
}

// Today is what chatKey and person used today.
func (t *Tally) Today(chatKey, person string) (chat, who Counts) {
	t.mu.Lock()
	defer t.mu.Unlock()
	d := t.days[DayOf(t.now())]
	if d == nil {
		return Counts{}, Counts{}
	}
	return d.Chats[chatKey], d.People[person]
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

// Report is day's usage ("" for today) with its top chats and people.
func (t *Tally) Report(day string, top int) Report {
	t.mu.Lock()
	defer t.mu.Unlock()
	if day == "" {
		day = DayOf(t.now())
	}
	return report(day, t.days[day], top)
}

// ReadReport is day's usage ("" for today, by now) from the state file at
// path, read without a running ship (`ship usage`).
func ReadReport(path, day string, now time.Time, top int) (Report, error) {
	f, err := read(path)
	if err != nil {
		return Report{}, err
	}
	if day == "" {
		day = DayOf(now)
	} else if _, err := time.Parse(dayLayout, day); err != nil {
		return Report{}, fmt.Errorf("reading the day %q: want YYYY-MM-DD: %w", day, err)
	}
	return report(day, f.Days[day], top), nil
}

func report(day string, d *Day, top int) Report {
	start, _ := time.Parse(dayLayout, day)
	r := Report{Day: day, ResetsAt: ResetAt(start).Format(time.RFC3339), Chats: []Row{}, People: []Row{}}
	if d == nil {
		return r
	}
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
