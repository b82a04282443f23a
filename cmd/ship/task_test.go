package main

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func writeTaskFile(t *testing.T, dir, name, text string) {
	t.Helper()
	folder := filepath.Join(dir, ".ship", "tasks")
	if err := os.MkdirAll(folder, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(folder, name+".md"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestTaskListShowsEveryTaskAndWhatIsWrong(t *testing.T) {
	dir := t.TempDir()
	if code, out, _ := runCLI(t, "task", "list", dir); code != 0 || !strings.Contains(out, "No scheduled tasks") {
		t.Errorf("empty folder: exit %d, %q", code, out)
	}
	writeTaskFile(t, dir, "daily-report", "---\ncron: \"0 9 * * 1-5\"\ntimezone: Europe/Berlin\nchatKey: telegram:chat:-100123\n---\nReport.\n")
	writeTaskFile(t, dir, "paused", "---\ncron: \"*/5 * * * *\"\nchatKey: api:chat:x\nenabled: false\n---\nWait.\n")
	writeTaskFile(t, dir, "typo", "---\ncron: \"0 9 * * *\"\nchatkey: api:chat:x\n---\nOops.\n")
	code, out, errOut := runCLI(t, "task", "list", dir)
	if code != 1 || !strings.Contains(errOut, "1 task file(s) invalid") {
		t.Errorf("exit %d, stderr %q; want 1 naming the invalid file", code, errOut)
	}
	lines := strings.Split(out, "\n")
	if len(lines) < 4 || !strings.HasPrefix(lines[0], "NAME") {
		t.Fatalf("output:\n%s", out)
	}
	for _, want := range []struct {
		line  int
		parts []string
	}{
		{1, []string{"daily-report", "0 9 * * 1-5", "Europe/Berlin", "telegram:chat:-100123", "yes", ":00 CE"}},
		{2, []string{"paused", "*/5 * * * *", "api:chat:x", "no"}},
		{3, []string{"typo", "invalid"}},
	} {
		for _, p := range want.parts {
			if !strings.Contains(lines[want.line], p) {
				t.Errorf("line %q lacks %q", lines[want.line], p)
			}
		}
	}
	if !strings.Contains(out, "typo.md is invalid and does not run: invalid task: frontmatter: line 3: unknown field chatkey") {
		t.Errorf("the error is not explained:\n%s", out)
	}
}

func TestTaskRunNeedsARunningShip(t *testing.T) {
	dir := t.TempDir()
	writeTaskFile(t, dir, "report", "---\ncron: \"0 9 * * *\"\nchatKey: api:chat:x\n---\nReport.\n")
	port := strconv.Itoa(closedPort(t))
	t.Setenv("SHIP_PORT", port)
	code, _, errOut := runCLI(t, "task", "run", "report", dir)
	if code != 1 || !strings.Contains(errOut, "ship is not running for "+dir) || !strings.Contains(errOut, "127.0.0.1:"+port) ||
		!strings.Contains(errOut, "ship start "+dir) {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, "task", "run", "../x", dir); code != 1 || !strings.Contains(errOut, "a-z 0-9 _ -") {
		t.Errorf("bad name: exit %d, stderr %q", code, errOut)
	}
}

// closedPort is a loopback port nothing listens on (it was free a moment
// ago).
func closedPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

// A cluster's runs are in NATS, which `ship task list` does not reach: it
// says where they are rather than showing none as if nothing ran.
func TestTaskListInAClusterSaysWhereTheRunsAre(t *testing.T) {
	dir := t.TempDir()
	writeTaskFile(t, dir, "daily", "---\ncron: \"0 9 * * *\"\nchatKey: api:chat:x\n---\nReport.\n")
	if err := os.WriteFile(filepath.Join(dir, "ship.json"), []byte(`{"cluster": {"replica": "r1", "nats": {"url": "nats://127.0.0.1:4222"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "task", "list", dir)
	if code != 0 || !strings.Contains(out, "daily") || !strings.Contains(out, "GET /api/tasks") {
		t.Errorf("exit %d, stdout %q, stderr %q; want the task and where its runs are", code, out, errOut)
	}
}

// Task files and their last results (the model's words) are not trusted
// text: `ship task list` shows control characters as visible escapes, so a
// file or a reply cannot clear the screen, retitle the terminal, write the
// clipboard (OSC 52) or reorder what the operator reads.
func TestTaskListEscapesControlCharacters(t *testing.T) {
	dir := t.TempDir()
	// YAML's "\e" is ESC: a cron that is also a "clear screen".
	writeTaskFile(t, dir, "sneaky", "---\ncron: \"\\e[2J\\e[H0 9 * * *\"\nchatKey: api:chat:x\n---\nHi.\n")
	writeTaskFile(t, dir, "report", "---\ncron: \"0 9 * * *\"\nchatKey: api:chat:x\n---\nReport.\n")
	state := `{"v":1,"tasks":{"report":{"lastRun":"2026-03-04T09:00:00Z","lastStatus":"ok",` +
		`"lastResult":"done\u001b]52;c;cm0gLXJmIH4=\u0007 \u202eevil\u009b31m\r\nfake row"}}}`
	if err := os.WriteFile(filepath.Join(dir, ".ship", "tasks", "state.json"), []byte(state), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "task", "list", dir)
	if code != 1 {
		t.Errorf("exit %d, stderr %q; want 1 for the invalid file", code, errOut)
	}
	for _, bad := range []string{"\x1b", "\x07", "\u202e", "\u009b", "\r"} {
		if strings.Contains(out+errOut, bad) {
			t.Errorf("output holds %q raw:\n%q", bad, out+errOut)
		}
	}
	for _, want := range []string{`\x1b[2J\x1b[H0 9 * * *`, `done\x1b]52;c;cm0gLXJmIH4=\x07 \u202eevil\u009b31m\x0d\x0afake row`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n"); strings.Contains(out, "\nfake row") || n > 8 {
		t.Errorf("a result's newline made a row of its own:\n%s", out)
	}
}

// A schedule with no date ("0 0 31 2 *") is a valid, enabled task that
// never runs: the list says so beside it and below the table.
func TestTaskListWarnsOfAScheduleThatNeverFires(t *testing.T) {
	dir := t.TempDir()
	writeTaskFile(t, dir, "feb31", "---\ncron: \"0 0 31 2 *\"\nchatKey: api:chat:x\n---\nNever.\n")
	writeTaskFile(t, dir, "sunday", "---\ncron: \"0 9 * * 7\"\nchatKey: api:chat:x\n---\nWeekly.\n")
	code, out, errOut := runCLI(t, "task", "list", dir)
	if code != 0 {
		t.Errorf("exit %d, stderr %q; a task that never fires is valid", code, errOut)
	}
	lines := strings.Split(out, "\n")
	if len(lines) < 3 || !strings.Contains(lines[1], "feb31") || !strings.Contains(lines[1], "yes (never runs)") {
		t.Errorf("the row does not say it never runs:\n%s", out)
	}
	if !strings.Contains(out, `warning: feb31.md (cron "0 0 31 2 *"): the schedule never fires`) {
		t.Errorf("no warning below the table:\n%s", out)
	}
	// The next Sunday 09:00 after now, in the machine's zone.
	next := time.Now()
	next = time.Date(next.Year(), next.Month(), next.Day(), 9, 0, 0, 0, time.Local)
	for next.Weekday() != time.Sunday || !next.After(time.Now()) {
		next = next.AddDate(0, 0, 1)
	}
	if !strings.Contains(lines[2], "sunday") || !strings.Contains(lines[2], next.Format("2006-01-02 09:00")) {
		t.Errorf("day-of-week 7 is not taken as Sunday (next %s):\n%s", next.Format("2006-01-02 15:04"), out)
	}
}
