// Package tasks is ship's scheduled tasks: task files in .ship/tasks
// (<name>.md, YAML frontmatter with a cron schedule, the body is the
// instruction), the next slot of each, and a Scheduler that queues one run
// per slot and keeps, in .ship/tasks/state.json, which slot it took last, so
// that a slot never runs twice, across restarts and crashes too.
package tasks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/robfig/cron/v3"
	"gopkg.in/yaml.v3"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/frontmatter"
)

// Errors callers tell apart (errors.Is).
var (
	// ErrNotFound: no task file of that name.
	ErrNotFound = errors.New("no such task")
	// ErrExists: task_create would replace a task.
	ErrExists = errors.New("a task of that name exists")
	// ErrInvalid: a task file, or a task to be written, is not valid.
	ErrInvalid = errors.New("invalid task")
	// ErrUnknownChat: the target chat has never written to ship, so there
	// is no route to it.
	ErrUnknownChat = errors.New("ship has not seen it yet")
)

// Limits of a task.
const (
	// MaxNameLen bounds a task's name (it is also a file name).
	MaxNameLen = 64
	// MaxInstructionChars bounds the instruction, as a chat message is.
	MaxInstructionChars = 10_000
)

// fileExt is what a task file's name ends with.
const fileExt = ".md"

// Task is one scheduled task as its file says.
type Task struct {
	// Name is the file name without .md: [a-z0-9_-]{1,64}.
	Name string
	// Cron is the schedule: five fields (minute hour day-of-month month
	// day-of-week) or a descriptor like @daily.
	Cron string
	// Timezone is an IANA zone ("Europe/Berlin"); "" is the machine's.
	Timezone string
	// ChatKey is the chat the run belongs to and replies go to.
	ChatKey string
	// Enabled is false when the file says enabled: false.
	Enabled bool
	// Instruction is the file's body: what the agent is asked to do.
	Instruction string
	// OutputSchema, when set, is the JSON Schema (JSON text) the run's
	// output must match (the output guardrail); OutputSchemaFile names a
	// file of the project holding one instead, read when the task fires.
	OutputSchema     string
	OutputSchemaFile string
}

// settings is the YAML head of a task file.
type settings struct {
	Cron     string `yaml:"cron"`
	Timezone string `yaml:"timezone,omitempty"`
	ChatKey  string `yaml:"chatKey"`
	Enabled  *bool  `yaml:"enabled,omitempty"`
	// OutputSchema is an object in YAML or inline JSON (JSON is YAML).
	OutputSchema     map[string]any `yaml:"outputSchema,omitempty"`
	OutputSchemaFile string         `yaml:"outputSchemaFile,omitempty"`
}

// CheckName reports whether name may name a task.
func CheckName(name string) error {
	if name == "" || len(name) > MaxNameLen {
		return fmt.Errorf("%w: name %q must be 1 to %d characters of a-z 0-9 _ -", ErrInvalid, clip(name, 80), MaxNameLen)
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '_', c == '-':
		default:
			return fmt.Errorf("%w: name %q must be 1 to %d characters of a-z 0-9 _ -", ErrInvalid, clip(name, 80), MaxNameLen)
		}
	}
	return nil
}

// Parse reads a task file: "---", the YAML frontmatter, "---", then the
// instruction. Unknown frontmatter fields are an error, so a typo never
// silently does nothing. When only a field's value is wrong, the Task
// returned with the error holds what was read (listings show it).
func Parse(name string, data []byte) (Task, error) {
	if err := CheckName(name); err != nil {
		return Task{Name: name}, err
	}
	if !utf8.Valid(data) {
		return Task{Name: name}, fmt.Errorf("%w: the file is not valid UTF-8", ErrInvalid)
	}
	head, body, err := frontmatter.Split(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n")))
	if err != nil {
		return Task{Name: name}, fmt.Errorf("%w: the file must start with a line \"---\", the settings (cron, chatKey, timezone, enabled), "+
			"a line \"---\", then the instruction", ErrInvalid)
	}
	var fm settings
	dec := yaml.NewDecoder(bytes.NewReader(head))
	dec.KnownFields(true)
	if err := dec.Decode(&fm); err != nil {
		return Task{Name: name}, fmt.Errorf("%w: frontmatter: %s", ErrInvalid, fileLines(yamlMessage(err)))
	}
	t := Task{
		Name: name, Cron: strings.TrimSpace(fm.Cron), Timezone: strings.TrimSpace(fm.Timezone),
		ChatKey: strings.TrimSpace(fm.ChatKey), Enabled: fm.Enabled == nil || *fm.Enabled,
		Instruction: strings.TrimSpace(string(body)), OutputSchemaFile: strings.TrimSpace(fm.OutputSchemaFile),
	}
	if fm.OutputSchema != nil {
		raw, err := json.Marshal(fm.OutputSchema)
		if err != nil {
			return t, fmt.Errorf("%w: outputSchema: %w", ErrInvalid, err)
		}
		t.OutputSchema = string(raw)
	}
	if err := t.Validate(); err != nil {
		return t, err
	}
	return t, nil
}

// fileLines turns the line numbers of a YAML message ("line 3") into the
// file's: the frontmatter starts on line 2.
func fileLines(msg string) string {
	var b strings.Builder
	for {
		before, after, ok := strings.Cut(msg, "line ")
		b.WriteString(before)
		if !ok {
			return b.String()
		}
		b.WriteString("line ")
		digits := len(after) - len(strings.TrimLeft(after, "0123456789"))
		if n, err := strconv.Atoi(after[:digits]); err == nil {
			b.WriteString(strconv.Itoa(n + 1))
		} else {
			b.WriteString(after[:digits])
		}
		msg = after[digits:]
	}
}

// yamlMessage words a YAML error for the person fixing the file.
func yamlMessage(err error) string {
	if errors.Is(err, io.EOF) {
		return "it is empty: cron and chatKey are required"
	}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs := make([]string, 0, len(te.Errors))
		for _, m := range te.Errors {
			if before, field, ok := strings.Cut(m, ": field "); ok && strings.HasSuffix(field, " not found in type tasks.settings") {
				m = before + ": unknown field " + strings.TrimSuffix(field, " not found in type tasks.settings") +
					" (the fields are cron, timezone, chatKey, enabled)"
			}
			msgs = append(msgs, m)
		}
		return strings.Join(msgs, "; ")
	}
	return strings.TrimPrefix(err.Error(), "yaml: ")
}

// Validate checks every field: the schedule parses, the time zone exists,
// the chat key can name a chat, the instruction is there.
func (t Task) Validate() error {
	if err := CheckName(t.Name); err != nil {
		return err
	}
	if _, err := parseCron(t.Cron); err != nil {
		return err
	}
	if _, err := loadZone(t.Timezone, time.UTC); err != nil {
		return err
	}
	if t.ChatKey == "" {
		return fmt.Errorf("%w: chatKey is required: the chat the results go to, e.g. telegram:chat:123456 or api:chat:default", ErrInvalid)
	}
	if _, err := chat.EscapeChatKey(t.ChatKey); err != nil || !strings.Contains(t.ChatKey, ":") {
		return fmt.Errorf("%w: chatKey %q is not a chat key (like telegram:chat:123456 or api:chat:default)", ErrInvalid, clip(t.ChatKey, 80))
	}
	if strings.HasPrefix(t.ChatKey, chat.ChannelAPI+":") {
		if _, ok := chat.APIChatID(t.ChatKey); !ok {
			return fmt.Errorf("%w: chatKey %q: an API chat is api:chat:<id>, the id 1 to 128 characters of A-Z a-z 0-9 . _ : @ -", ErrInvalid, clip(t.ChatKey, 80))
		}
	}
	if strings.TrimSpace(t.Instruction) == "" {
		return fmt.Errorf("%w: the instruction (the text after the second \"---\") is empty", ErrInvalid)
	}
	if n := utf8.RuneCountInString(t.Instruction); n > MaxInstructionChars {
		return fmt.Errorf("%w: the instruction has %d characters; at most %d", ErrInvalid, n, MaxInstructionChars)
	}
	return t.validateOutput()
}

// Format is the task as a file: what Parse reads back.
func (t Task) Format() ([]byte, error) {
	fm := settings{Cron: t.Cron, Timezone: t.Timezone, ChatKey: t.ChatKey}
	if !t.Enabled {
		off := false
		fm.Enabled = &off
	}
	if t.OutputSchema != "" {
		if err := json.Unmarshal([]byte(t.OutputSchema), &fm.OutputSchema); err != nil {
			return nil, fmt.Errorf("formatting task %s: outputSchema: %w", t.Name, err)
		}
	}
	head, err := yaml.Marshal(fm)
	if err != nil {
		return nil, fmt.Errorf("formatting task %s: %w", t.Name, err)
	}
	var b bytes.Buffer
	b.WriteString("---\n")
	b.Write(head)
	b.WriteString("---\n")
	b.WriteString(strings.TrimSpace(t.Instruction))
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// Schedule is a task's parsed schedule in its time zone.
type Schedule struct {
	spec *cron.SpecSchedule
	loc  *time.Location
}

// Schedule parses the task's cron and time zone; local is the zone of a
// task that names none.
func (t Task) Schedule(local *time.Location) (Schedule, error) {
	spec, err := parseCron(t.Cron)
	if err != nil {
		return Schedule{}, err
	}
	loc, err := loadZone(t.Timezone, local)
	if err != nil {
		return Schedule{}, err
	}
	return Schedule{spec: spec, loc: loc}, nil
}

// Location is the zone the schedule is read in.
func (s Schedule) Location() *time.Location { return s.loc }

// Next is the first slot strictly after t (zero when there is none within
// five years, as for "0 0 30 2 *").
func (s Schedule) Next(t time.Time) time.Time {
	return s.spec.Next(t.In(s.loc))
}

// maxLookBack is how far Latest looks for a slot: beyond the five years
// robfig/cron looks ahead, a schedule has no slot at all.
const maxLookBack = 5 * 366 * 24 * time.Hour

// Latest is the last slot at or before now (zero when there is none within
// five years). It looks back in growing windows, so a schedule that fires
// every minute costs a few steps, not one per minute since the epoch.
func (s Schedule) Latest(now time.Time) time.Time {
	for w := time.Minute; ; w *= 4 {
		w = min(w, maxLookBack)
		slot := s.Next(now.Add(-w))
		if !slot.IsZero() && !slot.After(now) {
			for {
				next := s.Next(slot)
				if next.IsZero() || next.After(now) {
					return slot
				}
				slot = next
			}
		}
		if w == maxLookBack {
			return time.Time{}
		}
	}
}

// loadZone loads an IANA zone; "" is local.
func loadZone(name string, local *time.Location) (*time.Location, error) {
	if name == "" {
		return local, nil
	}
	// "Local" would silently follow whatever machine ship runs on; a
	// task that wants that leaves the field out.
	if name == "Local" {
		return nil, fmt.Errorf("%w: timezone %q: leave the field out for the machine's zone, or name one like Europe/Berlin", ErrInvalid, name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("%w: timezone %q is not a known IANA zone (like Europe/Berlin, America/New_York, UTC)", ErrInvalid, clip(name, 80))
	}
	return loc, nil
}

// clip shortens s for an error message.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
