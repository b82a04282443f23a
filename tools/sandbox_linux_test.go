//go:build linux

package tools_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/tools"
)

// envRequireSandbox makes the sandbox tests fail, instead of skip, where
// bwrap is missing or does not work (CI sets it).
const envRequireSandbox = "SHIP_REQUIRE_SANDBOX"

// sandboxed builds exec_shell with a sandbox that must work, hiding what
// ship hides: the test is skipped when there is none here, or fails under
// SHIP_REQUIRE_SANDBOX=1.
func sandboxed(t testing.TB, opts tools.ExecShellOptions) *tools.ExecShell {
	t.Helper()
	opts.Sandbox = tools.SandboxRequired
	if opts.Hidden == nil {
		opts.Hidden = config.PrivateNames()
	}
	sh := tools.NewExecShell(opts)
	if st := sh.CheckSandbox(context.Background()); !st.Active {
		if os.Getenv(envRequireSandbox) == "1" {
			t.Fatalf("no working sandbox, and %s=1: %s", envRequireSandbox, st.Reason)
		}
		t.Skipf("no working sandbox (%s=1 makes this a failure): %s", envRequireSandbox, st.Reason)
	}
	return sh
}

// requireAbsent fails when an answer of exec_shell holds a canary as it is
// or base64-encoded: each run of base64 characters in its stdout and stderr
// is decoded and searched, so an encoding does not smuggle a canary past
// the check (as it does past redaction).
func requireAbsent(t *testing.T, what, answer string, canaries ...string) {
	t.Helper()
	var got execResult
	_ = json.Unmarshal([]byte(answer), &got)
	texts := []string{answer, got.Stdout, got.Stderr}
	for _, word := range strings.FieldsFunc(got.Stdout+"\n"+got.Stderr, func(r rune) bool {
		return !strings.ContainsRune("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=", r)
	}) {
		if b, err := base64.StdEncoding.DecodeString(word); err == nil {
			texts = append(texts, string(b))
		}
	}
	for _, c := range canaries {
		for _, text := range texts {
			if strings.Contains(text, c) {
				t.Errorf("%s: the canary %q leaked: %.300s", what, c, answer)
				break
			}
		}
	}
}

// Canaries in the environment of the process that stands for ship.
const (
	envCanaryKnown   = "canary-known-4f1c9e2a7b"   // a secret ship knows (LLM_API_KEY)
	envCanaryUnknown = "canary-unknown-8d3b6a0f5e" // one under a name nobody told it about
	envAsShip        = "SHIP_TEST_SANDBOX_AS_SHIP" // set: the test runs as that process
)

// procCommands try to read ship's environment through /proc.
func procCommands(shipPID int) []string {
	return []string{
		"cat /proc/$PPID/environ",
		"cat /proc/1/environ",
		fmt.Sprintf("cat /proc/%d/environ", shipPID), // ship by its host pid
		"for f in /proc/[0-9]*/environ; do base64 -w0 $f; echo; done",
		"base64 -w0 /proc/self/environ; echo; env | base64 -w0",
		"cat /proc/[0-9]*/cmdline | base64 -w0",
	}
}

// TestSandboxHidesShipsProcessAndEnvironment runs this test binary again
// as ship's stand-in, with the canaries in its environment from the start:
// /proc/PID/environ shows a process's environment as it was exec'd, so
// t.Setenv in this process would prove nothing. The child runs the
// commands and writes their answers to a file for this test to search.
func TestSandboxHidesShipsProcessAndEnvironment(t *testing.T) {
	if out := os.Getenv(envAsShip); out != "" {
		runAsShip(t, out)
		return
	}
	sandboxed(t, tools.ExecShellOptions{Dir: t.TempDir()}) // skips without a sandbox
	out := filepath.Join(t.TempDir(), "answers.json")
	cmd := exec.Command(os.Args[0], "-test.run=^TestSandboxHidesShipsProcessAndEnvironment$", "-test.count=1")
	cmd.Env = append(os.Environ(), envAsShip+"="+out, "LLM_API_KEY="+envCanaryKnown, "SHIP_TEST_DB_PASSWORD="+envCanaryUnknown)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ship's stand-in: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var answers map[string]string
	if err := json.Unmarshal(b, &answers); err != nil || len(answers) == 0 {
		t.Fatalf("answers %q: %v", b, err)
	}
	for command, answer := range answers {
		requireAbsent(t, command, answer, envCanaryKnown, envCanaryUnknown)
	}
}

// runAsShip is the child's side: ship's exec_shell, sandboxed, answering
// the commands into the file out.
func runAsShip(t *testing.T, out string) {
	sh := sandboxed(t, tools.ExecShellOptions{Dir: t.TempDir(), DropEnv: []string{"LLM_API_KEY"}})
	answers := map[string]string{}
	for _, command := range procCommands(os.Getpid()) {
		res, _ := run(t, context.Background(), sh, command, 0)
		answers[command] = res.Content
	}
	b, err := json.Marshal(answers)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestSandboxShowsNoHostProcessAndNoEnvironmentOfShips(t *testing.T) {
	t.Setenv("SHIP_TEST_DB_PASSWORD", envCanaryUnknown)
	sh := sandboxed(t, tools.ExecShellOptions{Dir: t.TempDir()})
	// The host's processes are out of sight: only the sandbox's own.
	_, got := run(t, context.Background(), sh, "ls -d /proc/[0-9]* | wc -l", 0)
	if n, err := strconv.Atoi(strings.TrimSpace(got.Stdout)); err != nil || n > 4 {
		t.Errorf("the sandbox sees %q processes, want its own few", got.Stdout)
	}
	// The environment is the sandbox's, none of ship's.
	_, got = run(t, context.Background(), sh, "env", 0)
	allowed := map[string]bool{"HOME": true, "LANG": true, "PATH": true, "PWD": true, "SHLVL": true, "TERM": true, "TMPDIR": true, "OLDPWD": true, "_": true}
	for _, l := range strings.Split(strings.TrimSpace(got.Stdout), "\n") {
		if name, _, _ := strings.Cut(l, "="); !allowed[name] {
			t.Errorf("the sandbox's environment has %q", l)
		}
	}
	if !strings.Contains(got.Stdout, "HOME=/tmp\n") || !strings.Contains(got.Stdout, "TERM=dumb\n") {
		t.Errorf("environment %q, want HOME=/tmp and TERM=dumb", got.Stdout)
	}
}

// project is a project folder with ship's own files in it, each holding a
// canary.
func project(t *testing.T) (dir string, canaries []string) {
	t.Helper()
	dir = t.TempDir()
	files := map[string]string{
		config.EnvFileName: "LLM_API_KEY=canary-dotenv-1b2c3d4e5f\n",
		config.FileName:    `{"llm": {"apiKey": "canary-shipjson-6a7b8c9d0e"}}`,
		filepath.Join(config.StateDir, "pending.jsonl"): `{"text": "canary-pending-2f3e4d5c6b"}` + "\n",
	}
	for name, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir, []string{"canary-dotenv-1b2c3d4e5f", "canary-shipjson-6a7b8c9d0e", "canary-pending-2f3e4d5c6b"}
}

func TestSandboxHidesShipsFiles(t *testing.T) {
	dir, canaries := project(t)
	sh := sandboxed(t, tools.ExecShellOptions{Dir: dir})
	for _, command := range []string{
		"cat .env", "cat ship.json", "cat .ship/pending.jsonl", "ls -la . .ship",
		"for f in .env ship.json .ship/*; do base64 -w0 $f; echo; done", "grep -r canary . /tmp",
		"cat $PWD/.env " + dir + "/ship.json",
	} {
		res, _ := run(t, context.Background(), sh, command, 0)
		requireAbsent(t, command, res.Content, canaries...)
	}
	// Nor may a command change them: they are read-only mount points.
	for _, command := range []string{
		"echo '{}' > ship.json", "rm -f .env", "mv .env moved", "rm -rf .ship", "touch .ship/approvals.json",
	} {
		if res, _ := run(t, context.Background(), sh, command, 0); res.OK {
			t.Errorf("%s: succeeded: %s", command, res.Content)
		}
	}
	for name, canary := range map[string]string{".env": canaries[0], "ship.json": canaries[1], ".ship/pending.jsonl": canaries[2]} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !strings.Contains(string(b), canary) {
			t.Errorf("%s was changed: %q, %v", name, b, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".ship", "approvals.json")); !os.IsNotExist(err) {
		t.Errorf(".ship/approvals.json was written (stat: %v)", err)
	}
}

func TestSandboxHidesFilesMadeAfterStart(t *testing.T) {
	dir := t.TempDir()
	sh := sandboxed(t, tools.ExecShellOptions{Dir: dir})
	if res, _ := run(t, context.Background(), sh, "ls -a", 0); !res.OK {
		t.Fatal(res.Content)
	}
	// A .env written after exec_shell was built, and after a command ran.
	const canary = "canary-late-9e8d7c6b5a"
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte("X="+canary), 0o600); err != nil {
		t.Fatal(err)
	}
	res, _ := run(t, context.Background(), sh, "cat .env; base64 -w0 .env", 0)
	requireAbsent(t, "cat .env", res.Content, canary)
}

func TestSandboxWritesOnlyToTheProjectFolder(t *testing.T) {
	dir := t.TempDir()
	sh := sandboxed(t, tools.ExecShellOptions{Dir: dir})
	res, got := run(t, context.Background(), sh, "mkdir -p sub && echo hi > sub/made && cat sub/made", 0)
	if !res.OK || got.Stdout != "hi\n" {
		t.Errorf("writing in the project folder: %s", res.Content)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "sub", "made")); err != nil || string(b) != "hi\n" {
		t.Errorf("the file is not on the host: %q, %v", b, err)
	}

	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("ship-sandbox-test-%d", os.Getpid())
	outside := []string{filepath.Join(filepath.Dir(dir), name), filepath.Join(home, name), filepath.Join("/tmp", name)}
	for _, p := range outside {
		t.Cleanup(func() { _ = os.Remove(p) }) // were the test to fail
	}
	for _, p := range outside {
		run(t, context.Background(), sh, "echo x > "+p, 0)
	}
	run(t, context.Background(), sh, "echo x > ../"+name+"-rel", 0)
	outside = append(outside, filepath.Join(filepath.Dir(dir), name+"-rel"))
	t.Cleanup(func() { _ = os.Remove(outside[len(outside)-1]) })
	for _, p := range outside {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("a command wrote %s on the host (stat: %v)", p, err)
		}
	}
	// The system and ship's home are read-only, or not there at all.
	for _, p := range []string{"/usr/" + name, "/etc/" + name, "/" + name, filepath.Join(home, name+"-dir")} {
		t.Cleanup(func() { _ = os.Remove(p) }) // were the test to fail
	}
	for _, command := range []string{"touch /usr/" + name, "touch /etc/" + name, "touch /" + name, "mkdir " + filepath.Join(home, name+"-dir")} {
		if res, _ := run(t, context.Background(), sh, command, 0); res.OK {
			t.Errorf("%s: succeeded: %s", command, res.Content)
		}
	}
}

// listen accepts connections on a loopback port of the host and reports
// each on the channel.
func listen(t *testing.T) (port int, accepted <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	ch := make(chan struct{}, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
			ch <- struct{}{}
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, ch
}

// dial is a command connecting to a loopback port (bash's /dev/tcp: no
// netcat needed); it exits 42 when there is no bash.
func dial(port int) string {
	return fmt.Sprintf("command -v bash >/dev/null || exit 42; bash -c 'echo hi > /dev/tcp/127.0.0.1/%d'", port)
}

func TestSandboxHasNoNetworkByDefault(t *testing.T) {
	port, accepted := listen(t)
	sh := sandboxed(t, tools.ExecShellOptions{Dir: t.TempDir()})
	res, got := run(t, context.Background(), sh, dial(port), 0)
	if got.ExitCode == 42 {
		t.Skip("bash is not installed")
	}
	if res.OK {
		t.Errorf("connected to the host's loopback: %s", res.Content)
	}
	select {
	case <-accepted:
		t.Error("the host's listener accepted a connection from the sandbox")
	default:
	}
}

func TestSandboxKeepsTheHostNetworkWhenAllowed(t *testing.T) {
	port, accepted := listen(t)
	sh := sandboxed(t, tools.ExecShellOptions{Dir: t.TempDir(), Network: true})
	if st := sh.SandboxStatus(); !st.Network {
		t.Errorf("status %+v, want network on", st)
	}
	res, got := run(t, context.Background(), sh, dial(port), 0)
	if got.ExitCode == 42 {
		t.Skip("bash is not installed")
	}
	if !res.OK {
		t.Fatalf("could not connect: %s", res.Content)
	}
	select {
	case <-accepted:
	case <-time.After(hangGuard):
		t.Fatal("the listener never saw the connection")
	}
}

// sessionLeader starts `sh -c 'sleep 100; :' token` in a session of its
// own, detached from everything, and waits until it is (field 6 of
// /proc/PID/stat is its session id): the token marks it in the host's
// process list.
func sessionLeader(token string) string {
	return fmt.Sprintf(`setsid sh -c 'sleep 100; :' %s & p=$!
until [ "$(cut -d' ' -f6 /proc/$p/stat 2>/dev/null)" = "$p" ]; do :; done`, token)
}

// requireNoProcess waits (bounded: SIGKILL is delivered asynchronously)
// until no live process on the host has token in its command line.
func requireNoProcess(t *testing.T, token string) {
	t.Helper()
	var found []string
	for deadline := time.Now().Add(hangGuard); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if found = withToken(token); len(found) == 0 {
			return
		}
	}
	t.Fatalf("still running after the call: %v", found)
}

func withToken(token string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), token) {
			continue
		}
		if state, _, ok := procStat(pid); ok && state != "Z" {
			found = append(found, fmt.Sprintf("pid %d: %q", pid, cmdline))
		}
	}
	return found
}

func TestSandboxLeavesNothingRunning(t *testing.T) {
	token := fmt.Sprintf("ship-detached-%d-%d", os.Getpid(), time.Now().UnixNano())
	sh := sandboxed(t, tools.ExecShellOptions{Dir: t.TempDir()})
	res, got := run(t, context.Background(), sh, sessionLeader(token)+"\nsh -c 'sleep 100; :' "+token+" &\necho started", 0)
	if !res.OK || got.Stdout != "started\n" || got.Warning != "" {
		t.Errorf("detached children: %s", res.Content)
	}
	requireNoProcess(t, token)
}

func TestSandboxTimeoutKillsEverything(t *testing.T) {
	token := fmt.Sprintf("ship-timeout-%d-%d", os.Getpid(), time.Now().UnixNano())
	sh := sandboxed(t, tools.ExecShellOptions{Dir: t.TempDir()})
	res, got := run(t, context.Background(), sh, sessionLeader(token)+"\necho started\nsleep 100", 1500)
	if res.OK || !got.TimedOut || got.Signal != "killed" || got.Stdout != "started\n" {
		t.Errorf("timeout: %s", res.Content)
	}
	requireNoProcess(t, token)
}

func TestSandboxReportsItsStateAndAnExitBySignal(t *testing.T) {
	sh := sandboxed(t, tools.ExecShellOptions{Dir: t.TempDir()})
	st := sh.SandboxStatus()
	if !st.Active || !st.Checked || st.Mode != tools.SandboxRequired || !strings.HasPrefix(st.Tool, "bwrap ") || st.Network || st.Reason != "" {
		t.Errorf("status %+v", st)
	}
	if d := sh.Definition().Description; !strings.Contains(d, "sandbox") || !strings.Contains(d, "no network") {
		t.Errorf("the description does not tell the model about the sandbox: %s", d)
	}
	// bwrap reports a command killed by a signal as a shell would, 128+N.
	res, got := run(t, context.Background(), sh, "echo before; kill -9 $$", 0)
	if res.OK || got.ExitCode != 137 || got.Stdout != "before\n" {
		t.Errorf("killed by a signal: %s", res.Content)
	}
}

func TestSandboxAutoWithoutBwrapRunsUnsandboxedAndSaysSo(t *testing.T) {
	var logs strings.Builder
	sh := tools.NewExecShell(tools.ExecShellOptions{Dir: t.TempDir(), Bwrap: filepath.Join(t.TempDir(), "bwrap"),
		Logger: zerolog.New(&logs)})
	res, got := run(t, context.Background(), sh, "echo ran", 0)
	if !res.OK || got.Stdout != "ran\n" {
		t.Errorf("auto without bwrap: %s", res.Content)
	}
	st := sh.SandboxStatus()
	if st.Active || !st.Checked || st.Refusing || !strings.Contains(st.Reason, "apt-get install bubblewrap") {
		t.Errorf("status %+v", st)
	}
	line := firstLine(logs.String(), "UNSANDBOXED")
	if !strings.Contains(line, `"level":"error"`) || !strings.Contains(line, "apt-get install bubblewrap") {
		t.Errorf("no loud log line: %s", logs.String())
	}
}

func firstLine(s, with string) string {
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if strings.Contains(sc.Text(), with) {
			return sc.Text()
		}
	}
	return ""
}

// BenchmarkExecShellPlain and BenchmarkExecShellSandboxed* measure one
// `true` through exec_shell, unsandboxed and in bwrap (a network namespace
// of its own, or the host's): the sandbox's cost per command.
func BenchmarkExecShellPlain(b *testing.B) {
	benchExec(b, tools.NewExecShell(tools.ExecShellOptions{Dir: b.TempDir(), Sandbox: tools.SandboxOff}))
}

func BenchmarkExecShellSandboxed(b *testing.B) {
	benchExec(b, sandboxed(b, tools.ExecShellOptions{Dir: b.TempDir()}))
}

func BenchmarkExecShellSandboxedWithNetwork(b *testing.B) {
	benchExec(b, sandboxed(b, tools.ExecShellOptions{Dir: b.TempDir(), Network: true}))
}

func benchExec(b *testing.B, sh *tools.ExecShell) {
	args := json.RawMessage(`{"command":"true"}`)
	for b.Loop() {
		if res := sh.Call(context.Background(), args); !res.OK {
			b.Fatal(res.Content)
		}
	}
}
