package tasks_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shipmyagent/ship/runtime/tasks"
)

// Day-of-week 7 is Sunday in cron (crontab(5): "0 or 7 is Sun"); a task
// written that way runs on Sundays, alone or at the end of a range, as the
// same task written with 0 does.
func TestDayOfWeekSevenIsSunday(t *testing.T) {
	// Wednesday 2026-03-04 10:30 UTC; the next Sunday is March 8.
	now := time.Date(2026, 3, 4, 10, 30, 0, 0, time.UTC)
	for _, tc := range []struct{ cron, same string }{
		{"0 9 * * 7", "0 9 * * 0"},
		{"0 9 * * SUN", "0 9 * * 0"},
		{"0 9 * * 5-7", "0 9 * * 5,6,0"},
		{"0 9 * * 1-7", "0 9 * * *"},
		{"0 9 * * 0-7", "0 9 * * *"},
		{"0 9 * * 1-7/2", "0 9 * * 1,3,5,0"},
		{"0 9 * * 3,7", "0 9 * * 0,3"},
		{"0 9 * * 7/2", "0 9 * * 0"},
		{"0 9 * * 7-7", "0 9 * * 0"},
	} {
		got, want := schedule(t, tc.cron, "UTC"), schedule(t, tc.same, "UTC")
		at := now
		for range 10 {
			g, w := got.Next(at), want.Next(at)
			if !g.Equal(w) {
				t.Errorf("%q: next after %v is %v; %q gives %v", tc.cron, at, g, tc.same, w)
				break
			}
			at = g
		}
	}
	if next := schedule(t, "0 9 * * 7", "UTC").Next(now); next.Weekday() != time.Sunday || next.Day() != 8 {
		t.Errorf("0 9 * * 7 next runs %v, want Sunday March 8", next)
	}
	// Beyond 7, and backwards ranges, are still refused with the reason.
	for _, bad := range []string{"0 9 * * 8", "0 9 * * 7-2", "0 9 * * 6-8"} {
		_, err := tasks.Parse("x", []byte("---\ncron: \""+bad+"\"\nchatKey: api:chat:a\n---\nhi\n"))
		if !errors.Is(err, tasks.ErrInvalid) || !strings.Contains(err.Error(), bad) {
			t.Errorf("%q: err %v, want invalid naming the cron", bad, err)
		}
	}
	// The file keeps what the operator wrote.
	task, err := tasks.Parse("x", []byte("---\ncron: \"0 9 * * 5-7\"\nchatKey: api:chat:a\n---\nhi\n"))
	if err != nil || task.Cron != "0 9 * * 5-7" {
		t.Errorf("parse: %+v, %v", task, err)
	}
}

// "0 0 31 2 *" parses (every field is in range) but no date matches: the
// task is valid and enabled, so its listing carries a warning saying it
// never fires instead of a next run that silently never comes.
func TestScheduleThatNeverFiresIsListedWithAWarning(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tasks")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, cron := range map[string]string{"never": "0 0 31 2 *", "leap": "0 0 29 2 *", "daily": "0 9 * * *"} {
		text := "---\ncron: \"" + cron + "\"\nchatKey: api:chat:a\n---\nhi\n"
		if err := os.WriteFile(filepath.Join(dir, name+".md"), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	list, err := tasks.List(dir, time.Date(2026, 3, 4, 10, 30, 0, 0, time.UTC), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]tasks.Status{}
	for _, s := range list {
		got[s.Name] = s
	}
	if s := got["never"]; s.Error != "" || !s.Enabled || !strings.Contains(s.Warning, "never fires") || !s.NextRun.IsZero() {
		t.Errorf("never = %+v; want valid, enabled, no next run, a warning", s)
	}
	for _, name := range []string{"leap", "daily"} {
		if s := got[name]; s.Warning != "" || s.NextRun.IsZero() {
			t.Errorf("%s = %+v; want a next run and no warning", name, s)
		}
	}
}

// The log of a start names a task whose schedule never fires, at warn
// level, so an operator reading it learns why the task never ran.
func TestSchedulerWarnsOfATaskThatNeverFires(t *testing.T) {
	e := newEnv(t, setup{})
	e.writeTask("leap-day", taskFile("0 0 31 2 *", "api:chat:a", "Never."), e.clock.Now())
	e.writeTask("daily", taskFile("0 9 * * *", "api:chat:a", "Daily."), e.clock.Now())
	if next := e.sched.Tick(context.Background()); next.IsZero() {
		t.Error("no next slot, though daily has one")
	}
	var warned, loaded bool
	for _, line := range strings.Split(e.logs.String(), "\n") {
		switch {
		case strings.Contains(line, `"task":"leap-day"`) && strings.Contains(line, `"level":"warn"`) && strings.Contains(line, "never fires"):
			warned = true
		case strings.Contains(line, `"task":"daily"`) && strings.Contains(line, "never fires"):
			t.Errorf("daily warned about: %s", line)
		case strings.Contains(line, `"task":"daily"`) && strings.Contains(line, "task loaded"):
			loaded = true
		}
	}
	if !warned || !loaded {
		t.Errorf("warned %v, daily loaded %v; logs:\n%s", warned, loaded, e.logs.String())
	}
}
