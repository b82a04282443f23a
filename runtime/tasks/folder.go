package tasks

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/renameio/v2"
)

// maxFileBytes bounds a task file: an instruction of 10,000 characters
// in any script fits with room for the frontmatter.
const maxFileBytes = 64 << 10

// Entry is one task file as read: its task, or why it is not valid.
type Entry struct {
	Name string
	// Task is the task; when Err is set it holds what could be read.
	Task Task
	// Err says why the file is not a valid task (wrapping ErrInvalid), or
	// why it could not be read.
	Err error
	// ModTime is the file's modification time: slots before it do not
	// count as missed (an edited or new task does not catch up).
	ModTime time.Time
	// size and modTime identify the version read (see Scheduler.reload).
	size int64
}

// Folder is the task folder (<project>/.ship/tasks): one <name>.md per
// task, and state.json, the scheduler's bookkeeping.
type Folder struct {
	Dir string
}

// Path is the file of task name.
func (f Folder) Path(name string) string { return filepath.Join(f.Dir, name+fileExt) }

// statePath is the scheduler's bookkeeping file.
func (f Folder) statePath() string { return filepath.Join(f.Dir, StateFile) }

// taskFile is a task file found in the folder, not yet read.
type taskFile struct {
	name    string
	size    int64
	modTime time.Time
}

// list stats the folder's task files, sorted by name. A missing folder
// has none. Dot files are renameio's half-written temporaries.
func (f Folder) list() ([]taskFile, error) {
	des, err := os.ReadDir(f.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the task folder: %w", err)
	}
	var out []taskFile
	for _, de := range des {
		n := de.Name()
		if !strings.HasSuffix(n, fileExt) || strings.HasPrefix(n, ".") || de.IsDir() {
			continue
		}
		info, err := de.Info()
		if err != nil {
			continue // removed since ReadDir
		}
		out = append(out, taskFile{name: strings.TrimSuffix(n, fileExt), size: info.Size(), modTime: info.ModTime()})
	}
	return out, nil
}

// read reads and parses one listed file.
func (f Folder) read(tf taskFile) Entry {
	e := Entry{Name: tf.name, ModTime: tf.modTime, size: tf.size, Task: Task{Name: tf.name}}
	if err := CheckName(tf.name); err != nil {
		e.Err = fmt.Errorf("file %s%s: %w", tf.name, fileExt, err)
		return e
	}
	if tf.size > maxFileBytes {
		e.Err = fmt.Errorf("%w: the file has %d bytes; at most %d", ErrInvalid, tf.size, maxFileBytes)
		return e
	}
	data, err := os.ReadFile(f.Path(tf.name))
	if err != nil {
		e.Err = fmt.Errorf("reading task file: %w", err)
		return e
	}
	e.Task, e.Err = Parse(tf.name, data)
	return e
}

// Read reads every task file, sorted by name. An invalid file is an entry
// with Err; the others are unaffected.
func (f Folder) Read() ([]Entry, error) {
	files, err := f.list()
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(files))
	for _, tf := range files {
		out = append(out, f.read(tf))
	}
	return out, nil
}

// Get reads task name (ErrNotFound when there is no such file).
func (f Folder) Get(name string) (Entry, error) {
	if err := CheckName(name); err != nil {
		return Entry{}, err
	}
	info, err := os.Stat(f.Path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return Entry{}, fmt.Errorf("task %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return Entry{}, fmt.Errorf("reading task %s: %w", name, err)
	}
	return f.read(taskFile{name: name, size: info.Size(), modTime: info.ModTime()}), nil
}

// Create writes a new task file atomically; a task of that name already
// there is ErrExists (delete it first, so nothing is replaced by mistake).
func (f Folder) Create(t Task) error {
	if err := t.Validate(); err != nil {
		return err
	}
	data, err := t.Format()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(f.Dir, 0o700); err != nil {
		return fmt.Errorf("creating the task folder: %w", err)
	}
	if _, err := os.Lstat(f.Path(t.Name)); err == nil {
		return fmt.Errorf("task %s: %w; delete it first, or pick another name", t.Name, ErrExists)
	}
	if err := renameio.WriteFile(f.Path(t.Name), data, 0o600, renameio.WithTempDir(f.Dir)); err != nil {
		return fmt.Errorf("writing task %s: %w", t.Name, err)
	}
	return nil
}

// Delete removes task name's file (ErrNotFound when there is none). Its
// bookkeeping stays: a task created again under the name starts from its
// file's time, so no slot runs twice.
func (f Folder) Delete(name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	err := os.Remove(f.Path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("task %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("deleting task %s: %w", name, err)
	}
	return nil
}

// Status is one task as listings show it (GET /api/tasks, ship task list,
// task_list).
type Status struct {
	Name     string `json:"name"`
	Cron     string `json:"cron"`
	Timezone string `json:"timezone"`
	ChatKey  string `json:"chatKey"`
	Enabled  bool   `json:"enabled"`
	// NextRun is the next slot (zero when disabled, invalid or never).
	NextRun time.Time `json:"nextRun,omitzero"`
	LastRun time.Time `json:"lastRun,omitzero"`
	// LastRunID names the latest run (its taskId on the event stream).
	LastRunID string `json:"lastRunId,omitempty"`
	// LastStatus is started, ok, failed, skipped or interrupted.
	LastStatus string `json:"lastStatus,omitempty"`
	LastResult string `json:"lastResult,omitempty"`
	// Error says why the file is not a valid task; such a task never runs.
	Error string `json:"error,omitempty"`
	// Warning says what is wrong with a valid task, such as a schedule
	// that never fires.
	Warning string `json:"warning,omitempty"`
}

// List reads the folder and the bookkeeping from disk: what `ship task
// list` shows, whether or not ship is running. local is the zone of tasks
// that name none.
func List(dir string, now time.Time, local *time.Location) ([]Status, error) {
	f := Folder{Dir: dir}
	entries, err := f.Read()
	if err != nil {
		return nil, err
	}
	st, err := readState(f.statePath())
	if err != nil {
		return nil, err
	}
	return statuses(entries, st, now, local), nil
}

// statuses joins entries with their bookkeeping.
func statuses(entries []Entry, st state, now time.Time, local *time.Location) []Status {
	out := make([]Status, 0, len(entries))
	for _, e := range entries {
		s := Status{Name: e.Name, Cron: e.Task.Cron, Timezone: e.Task.Timezone, ChatKey: e.Task.ChatKey, Enabled: e.Task.Enabled}
		if s.Timezone == "" {
			s.Timezone = zoneName(local)
		}
		if e.Err != nil {
			s.Error = e.Err.Error()
		} else if sched, err := e.Task.Schedule(local); err == nil {
			if e.Task.Enabled {
				s.NextRun = sched.Next(now)
			}
			s.Warning = sched.NeverFires(now)
		}
		if ts, ok := st.Tasks[e.Name]; ok {
			s.LastRun, s.LastRunID, s.LastStatus, s.LastResult = ts.LastRun, ts.LastRunID, ts.LastStatus, ts.LastResult
			if loc := zoneOf(e.Task, local); !s.LastRun.IsZero() {
				s.LastRun = s.LastRun.In(loc)
			}
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// zoneOf is the zone task t's times are shown in.
func zoneOf(t Task, local *time.Location) *time.Location {
	if loc, err := loadZone(t.Timezone, local); err == nil {
		return loc
	}
	return local
}

// zoneName names a task's zone for listings; the machine's is "Local".
func zoneName(loc *time.Location) string { return loc.String() }
