package main

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
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
