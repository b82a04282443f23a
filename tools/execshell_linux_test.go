//go:build linux

package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/internal/logbuf"
	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/tools"
)

// hangGuard bounds every wait of these tests: reaching it is a failure,
// never a timing measurement.
const hangGuard = 60 * time.Second

// unsandboxed is exec_shell without the sandbox, for the tests of what
// holds either way (the process group, the secret filter): their commands
// report pids the host can look up, which a pid namespace would not.
func unsandboxed(opts tools.ExecShellOptions) *tools.ExecShell {
	opts.Sandbox = tools.SandboxOff
	return tools.NewExecShell(opts)
}

// call calls exec_shell with a command (and a timeout in ms when > 0) and
// decodes the answer; it is safe off the test goroutine.
func call(ctx context.Context, sh *tools.ExecShell, command string, timeoutMs float64) (agent.ToolResult, execResult, error) {
	in := map[string]any{"command": command}
	if timeoutMs > 0 {
		in["timeoutMs"] = timeoutMs
	}
	args, err := json.Marshal(in)
	if err != nil {
		return agent.ToolResult{}, execResult{}, err
	}
	done := make(chan agent.ToolResult, 1)
	go func() { done <- sh.Call(ctx, args) }()
	var res agent.ToolResult
	select {
	case res = <-done:
	case <-time.After(hangGuard):
		return res, execResult{}, fmt.Errorf("exec_shell %q did not return", command)
	}
	var got execResult
	if err := json.Unmarshal([]byte(res.Content), &got); err != nil {
		return res, got, fmt.Errorf("result %q is not JSON: %w", res.Content, err)
	}
	if got.Success != res.OK {
		return res, got, fmt.Errorf("success %v but OK %v", got.Success, res.OK)
	}
	return res, got, nil
}

// run is call on the test goroutine, failing the test on errors.
func run(t *testing.T, ctx context.Context, sh *tools.ExecShell, command string, timeoutMs float64) (agent.ToolResult, execResult) {
	t.Helper()
	res, got, err := call(ctx, sh, command, timeoutMs)
	if err != nil {
		t.Fatal(err)
	}
	return res, got
}

// readPID waits (bounded) for the command to have written a pid to file.
func readPID(t *testing.T, file string) int {
	t.Helper()
	for deadline := time.Now().Add(hangGuard); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		b, err := os.ReadFile(file)
		if err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			return pid
		}
	}
	t.Fatalf("%s was never written", file)
	return 0
}

// living lists the processes of group pgid, and those of pids, that are
// alive (not zombies waiting for init to reap them).
func living(pgid int, pids ...int) []string {
	var alive []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, group, ok := procStat(pid)
		if ok && state != "Z" && (group == pgid || containsInt(pids, pid)) {
			alive = append(alive, fmt.Sprintf("pid %d (group %d, state %s)", pid, group, state))
		}
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			if state, _, ok := procStat(pid); !ok || state != "Z" {
				alive = append(alive, fmt.Sprintf("pid %d answers kill 0 (%v)", pid, err))
			}
		}
	}
	return alive
}

// procStat reads a process's state and process group from /proc.
func procStat(pid int) (state string, pgid int, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", 0, false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // state ppid pgrp ...
	if len(f) < 3 {
		return "", 0, false
	}
	pgid, err = strconv.Atoi(f[2])
	return f[0], pgid, err == nil
}

func containsInt(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// requireGone waits (bounded: SIGKILL is delivered asynchronously) until no
// process of the group and none of pids is alive.
func requireGone(t *testing.T, pgid int, pids ...int) {
	t.Helper()
	var alive []string
	for deadline := time.Now().Add(hangGuard); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if alive = living(pgid, pids...); len(alive) == 0 {
			return
		}
	}
	t.Fatalf("still running after the call: %v", alive)
}

func TestExecShellReturnsOutputAndExitCode(t *testing.T) {
	sh := unsandboxed(tools.ExecShellOptions{Dir: t.TempDir()})
	res, got := run(t, context.Background(), sh, "echo out; echo err >&2; exit 3", 0)
	if res.OK || got.ExitCode != 3 || got.Stdout != "out\n" || got.Stderr != "err\n" || !strings.Contains(got.Error, "exited with code 3") {
		t.Errorf("exit 3: %s", res.Content)
	}
	res, got = run(t, context.Background(), sh, "printf 'a b'", 0)
	if !res.OK || got.ExitCode != 0 || got.Stdout != "a b" || got.Stderr != "" || got.Error != "" || got.TimeoutMs != 30000 {
		t.Errorf("printf: %s", res.Content)
	}
	res, got = run(t, context.Background(), sh, "echo before; kill -9 $$", 0)
	if res.OK || got.ExitCode != -1 || got.Signal != "killed" || got.Stdout != "before\n" || got.TimedOut {
		t.Errorf("killed by a signal: %s", res.Content)
	}
}

func TestExecShellRunsInDir(t *testing.T) {
	dir := t.TempDir()
	want, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	sh := tools.NewExecShell(tools.ExecShellOptions{Dir: dir})
	_, got := run(t, context.Background(), sh, `pwd -P; echo "$PWD"; touch made-here`, 0)
	lines := strings.Split(strings.TrimSpace(got.Stdout), "\n")
	if len(lines) != 2 || lines[0] != want || lines[1] != dir {
		t.Errorf("pwd = %q, want %s and PWD %s", got.Stdout, want, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "made-here")); err != nil {
		t.Errorf("the file was not made in Dir: %v", err)
	}
}

func TestExecShellHidesSecrets(t *testing.T) {
	const apiKey = "sk-test-0123456789abcdef"
	const fileSecret = "hunter2-file-secret"
	const short = "abc12" // below the minimum: ordinary text, never redacted
	t.Setenv("LLM_API_KEY", apiKey)
	t.Setenv("SHIP_TEST_ALIAS", "Bearer "+fileSecret)
	t.Setenv("SHIP_TEST_PLAIN", "visible")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("token="+fileSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs logbuf.Buffer
	// Unsandboxed: this is the second layer, for when the sandbox is off
	// (a sandboxed command sees none of ship's environment at all).
	sh := unsandboxed(tools.ExecShellOptions{
		Dir:     dir,
		DropEnv: []string{"LLM_API_KEY"},
		Secrets: []string{fileSecret + "\n", short, "abcdefgh", "efghijkl"},
		Logger:  zerolog.New(&logs),
	})

	// Dropped by name, and an alias holding a secret is dropped too.
	_, got := run(t, context.Background(), sh, `echo "[$LLM_API_KEY][$SHIP_TEST_ALIAS][$SHIP_TEST_PLAIN]"`, 0)
	if got.Stdout != "[][][visible]\n" {
		t.Errorf("environment: %q", got.Stdout)
	}
	// Values from a file, a literal (the dropped variable's value is a
	// secret too), stderr, and overlapping secrets.
	res, got := run(t, context.Background(), sh, "cat secret.txt; echo "+apiKey+" >&2; echo "+short+"; echo xxabcdefghijklyy", 0)
	if !res.OK || got.Stdout != "token=<redacted>\n"+short+"\nxx<redacted>yy\n" || got.Stderr != "<redacted>\n" {
		t.Errorf("redaction: %s", res.Content)
	}
	for _, secret := range []string{apiKey, fileSecret, "abcdefgh", "efghijkl"} {
		if strings.Contains(res.Content, secret) || strings.Contains(logs.String(), secret) {
			t.Errorf("%q leaked: result %s, log %s", secret, res.Content, logs.String())
		}
	}
	for _, want := range []string{`"tool":"exec_shell"`, `"command":"cat secret.txt; echo <redacted> >&2`, `"exitCode":0`, `"durationMs":`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s: %s", want, logs.String())
		}
	}
}

func TestExecShellRedactsASecretAcrossTheCap(t *testing.T) {
	const secret = "SPLITSECRET-987654321"
	dir := t.TempDir()
	// The cap (100) falls inside the secret, which starts at byte 95.
	body := strings.Repeat("x", 95) + secret + "tail"
	if err := os.WriteFile(filepath.Join(dir, "out.txt"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	sh := tools.NewExecShell(tools.ExecShellOptions{Dir: dir, MaxOutput: 100, Secrets: []string{secret}})
	res, got := run(t, context.Background(), sh, "cat out.txt; cat out.txt >&2", 0)
	want := strings.Repeat("x", 95) + "\n… 25 bytes cut"
	if got.Stdout != want || got.Stderr != want || got.StdoutCutBytes != 25 || got.StderrCutBytes != 25 {
		t.Errorf("got %s", res.Content)
	}
	if strings.Contains(res.Content, "SPLIT") {
		t.Errorf("part of the secret leaked: %s", res.Content)
	}
}

func TestExecShellCapsOutput(t *testing.T) {
	sh := tools.NewExecShell(tools.ExecShellOptions{Dir: t.TempDir(), MaxOutput: 1000})
	res, got := run(t, context.Background(), sh, `head -c 5000 /dev/zero | tr '\0' a; head -c 1500 /dev/zero | tr '\0' b >&2`, 0)
	if !res.OK || got.Stdout != strings.Repeat("a", 1000)+"\n… 4000 bytes cut" || got.StdoutCutBytes != 4000 {
		t.Errorf("stdout: %.80q… (%d cut)", got.Stdout, got.StdoutCutBytes)
	}
	if got.Stderr != strings.Repeat("b", 1000)+"\n… 500 bytes cut" || got.StderrCutBytes != 500 {
		t.Errorf("stderr: %.80q… (%d cut)", got.Stderr, got.StderrCutBytes)
	}
	// The cut never splits a character: é is two bytes.
	sh = tools.NewExecShell(tools.ExecShellOptions{Dir: t.TempDir(), MaxOutput: 5})
	_, got = run(t, context.Background(), sh, "printf 'abcdéf'", 0)
	if got.Stdout != "abcd\n… 3 bytes cut" {
		t.Errorf("utf-8 cut: %q", got.Stdout)
	}
}

func TestExecShellClampsTheTimeout(t *testing.T) {
	sh := tools.NewExecShell(tools.ExecShellOptions{Dir: t.TempDir(), DefaultTimeout: time.Minute, MaxTimeout: 3 * time.Second})
	res, got := run(t, context.Background(), sh, "exit 0", 1e7)
	if !res.OK || got.TimeoutMs != 3000 || !got.TimeoutClamped || got.RequestedTimeoutMs != 1e7 {
		t.Errorf("clamped: %s", res.Content)
	}
	res, got = run(t, context.Background(), sh, "exit 0", 1500)
	if !res.OK || got.TimeoutMs != 1500 || got.TimeoutClamped {
		t.Errorf("within the maximum: %s", res.Content)
	}
	res, got = run(t, context.Background(), sh, "exit 0", 0)
	if got.TimeoutMs != 3000 || got.TimeoutClamped {
		t.Errorf("a default above the maximum is lowered to it: %s", res.Content)
	}
}

func TestExecShellTimeoutKillsTheWholeGroup(t *testing.T) {
	dir := t.TempDir()
	sh := unsandboxed(tools.ExecShellOptions{Dir: dir})
	// A background child, a grandchild in a subshell, then the shell's own
	// pid (the group id) once both are recorded; then it outsleeps the
	// timeout.
	cmd := `sleep 100 & echo $! > child.pid
(sleep 100 & echo $! > grandchild.pid; wait) &
while [ ! -s grandchild.pid ]; do :; done
echo $$ > sh.pid
echo started
sleep 100`
	res, got := run(t, context.Background(), sh, cmd, 1500)
	if res.OK || !got.TimedOut || got.Cancelled || got.Signal != "killed" || got.Stdout != "started\n" || !strings.Contains(got.Error, "timed out") {
		t.Errorf("timeout: %s", res.Content)
	}
	pgid := readPID(t, filepath.Join(dir, "sh.pid"))
	requireGone(t, pgid, pgid, readPID(t, filepath.Join(dir, "child.pid")), readPID(t, filepath.Join(dir, "grandchild.pid")))
}

func TestExecShellCancellationKillsTheWholeGroup(t *testing.T) {
	dir := t.TempDir()
	sh := unsandboxed(tools.ExecShellOptions{Dir: dir, DefaultTimeout: 10 * time.Minute, MaxTimeout: 10 * time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type answer struct {
		res agent.ToolResult
		got execResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, got, err := call(ctx, sh, `sleep 100 & echo $! > child.pid; echo $$ > sh.pid; sleep 100`, 0)
		done <- answer{res, got, err}
	}()
	pgid := readPID(t, filepath.Join(dir, "sh.pid"))
	child := readPID(t, filepath.Join(dir, "child.pid"))
	cancel()
	var a answer
	select {
	case a = <-done:
	case <-time.After(hangGuard):
		t.Fatal("cancelling did not end the call")
	}
	if a.err != nil {
		t.Fatal(a.err)
	}
	if a.res.OK || !a.got.Cancelled || a.got.TimedOut || !strings.Contains(a.got.Error, "cancelled") {
		t.Errorf("cancelled: %s", a.res.Content)
	}
	requireGone(t, pgid, pgid, child)

	// A run cancelled before the call starts nothing.
	res, _ := run(t, ctx, sh, "touch never", 0)
	if _, err := os.Stat(filepath.Join(dir, "never")); res.OK || !os.IsNotExist(err) {
		t.Errorf("ran after cancellation: %s (stat: %v)", res.Content, err)
	}
}

func TestExecShellKillsBackgroundChildrenWhenTheShellExits(t *testing.T) {
	dir := t.TempDir()
	sh := unsandboxed(tools.ExecShellOptions{Dir: dir})
	// The child holds stdout open; the call must not wait for it.
	res, got := run(t, context.Background(), sh, `sleep 100 & echo $! > child.pid; echo $$ > sh.pid; echo done`, 0)
	if !res.OK || got.Stdout != "done\n" || got.Warning != "" {
		t.Errorf("background child: %s", res.Content)
	}
	pgid := readPID(t, filepath.Join(dir, "sh.pid"))
	requireGone(t, pgid, readPID(t, filepath.Join(dir, "child.pid")))
}

func TestExecShellDoesNotHangOnADetachedProcess(t *testing.T) {
	dir := t.TempDir()
	sh := unsandboxed(tools.ExecShellOptions{Dir: dir})
	// setsid leaves the group, so the kill cannot reach it; it keeps stdout
	// open, and the call must still return, with a warning.
	// The shell waits until the child has its own session (field 6 of
	// /proc/PID/stat), or the group kill could catch it before it leaves.
	res, got := run(t, context.Background(), sh, `command -v setsid >/dev/null || exit 42
setsid sleep 100 & p=$!; echo $p > detached.pid
until [ "$(cut -d' ' -f6 /proc/$p/stat)" = "$p" ]; do :; done
echo done`, 0)
	if got.ExitCode == 42 {
		t.Skip("setsid is not installed")
	}
	t.Cleanup(func() { _ = syscall.Kill(readPID(t, filepath.Join(dir, "detached.pid")), syscall.SIGKILL) })
	if !res.OK || got.Stdout != "done\n" || got.Warning == "" {
		t.Errorf("detached: %s", res.Content)
	}
}

func TestExecShellConcurrentCalls(t *testing.T) {
	sh := tools.NewExecShell(tools.ExecShellOptions{Dir: t.TempDir(), Secrets: []string{"concurrent-secret"}})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			res, got, err := call(context.Background(), sh, fmt.Sprintf("echo %d concurrent-secret; echo %d >&2", i, i), 0)
			if err != nil {
				t.Error(err)
				return
			}
			if want := fmt.Sprintf("%d <redacted>\n", i); !res.OK || got.Stdout != want || got.Stderr != fmt.Sprintf("%d\n", i) {
				t.Errorf("call %d: %s", i, res.Content)
			}
		})
	}
	wg.Wait()
}
