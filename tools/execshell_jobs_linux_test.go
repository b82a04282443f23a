package tools_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/jobs"
	"github.com/shipmyagent/ship/runtime/turn"
	"github.com/shipmyagent/ship/tools"
)

// jobShell is exec_shell with background jobs, and the jobs it reports
// as ended.
func jobShell(t *testing.T, dir string, opts jobs.Options) (*tools.ExecShell, *jobs.Manager, chan jobs.Result) {
	t.Helper()
	m, err := jobs.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	ended := make(chan jobs.Result, 4)
	m.SetHooks(jobs.Hooks{Ended: func(_ jobs.Job, r jobs.Result) { ended <- r }})
	return unsandboxed(tools.ExecShellOptions{Dir: dir, Jobs: m}), m, ended
}

func background(t *testing.T, sh *tools.ExecShell, command string) map[string]any {
	t.Helper()
	ctx := dispatch.WithRequest(context.Background(), turn.Route{ChatKey: "telegram:1", Channel: "telegram", ChatID: "1"})
	args, _ := json.Marshal(map[string]any{"command": command, "background": true})
	res := sh.Call(ctx, args)
	var got map[string]any
	if err := json.Unmarshal([]byte(res.Content), &got); err != nil {
		t.Fatalf("%s: %v", res.Content, err)
	}
	return got
}

func TestExecShellBackgroundAnswersAtOnceAndReportsTheResult(t *testing.T) {
	dir := t.TempDir()
	sh, m, ended := jobShell(t, dir, jobs.Options{})
	// The call returns while the command still waits for the file: it
	// cannot have finished.
	got := background(t, sh, `until [ -e go ]; do sleep 0.05; done; echo built`)
	id, _ := got["job"].(string)
	if got["success"] != true || id == "" {
		t.Fatalf("background call: %v", got)
	}
	if list := m.List("telegram:1"); len(list) != 1 || list[0].State != jobs.Running {
		t.Fatalf("jobs while it waits: %+v", list)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-ended:
		if !r.OK || r.ExitCode != 0 || !strings.Contains(r.Content, "built") {
			t.Fatalf("result: %+v", r)
		}
	case <-time.After(hangGuard):
		t.Fatal("the job never ended")
	}
}

func TestExecShellBackgroundCancelKillsTheGroup(t *testing.T) {
	dir := t.TempDir()
	sh, m, ended := jobShell(t, dir, jobs.Options{})
	got := background(t, sh, `sleep 100 & echo $! > child.pid; echo $$ > sh.pid; sleep 100`)
	pgid := readPID(t, filepath.Join(dir, "sh.pid"))
	child := readPID(t, filepath.Join(dir, "child.pid"))
	if _, err := m.Cancel("telegram:1", got["job"].(string), "alice"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	case <-time.After(hangGuard):
		t.Fatal("the cancelled job never ended")
	}
	requireGone(t, pgid, pgid, child)
	if list := m.List(""); list[0].State != jobs.Cancelled {
		t.Fatalf("state %s, want cancelled", list[0].State)
	}
}

func TestExecShellBackgroundOverTheLimitStartsNothing(t *testing.T) {
	dir := t.TempDir()
	sh, _, _ := jobShell(t, dir, jobs.Options{PerChat: 1})
	background(t, sh, `until [ -e go ]; do sleep 0.05; done`)
	got := background(t, sh, `touch second`)
	if got["success"] != false || !strings.Contains(got["error"].(string), "too many background jobs") {
		t.Fatalf("over the limit: %v", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "second")); !os.IsNotExist(err) {
		t.Fatalf("the refused job ran (stat: %v)", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
}
