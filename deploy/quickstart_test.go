package deploy_test

import (
	"context"
	"crypto/rand"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/logbuf"
)

// hangGuard bounds every wait: a hang fails the test instead of CI.
const hangGuard = 60 * time.Second

// buildCommand is the Dockerfile's `go build` command line.
func buildCommand(t *testing.T, lines []string) string {
	t.Helper()
	for _, run := range instruction(lines, "RUN") {
		if _, cmd, ok := strings.Cut(run, "CGO_ENABLED=0 go build"); ok {
			return "CGO_ENABLED=0 go build" + cmd
		}
	}
	t.Fatal("the Dockerfile has no `CGO_ENABLED=0 go build` step")
	return ""
}

// healthURL is the URL the Dockerfile's HEALTHCHECK fetches, on port.
func healthURL(lines []string, port string) (string, error) {
	hc := instruction(lines, "HEALTHCHECK")
	if len(hc) != 1 {
		return "", fmt.Errorf("want one HEALTHCHECK, have %q", hc)
	}
	for _, f := range strings.Fields(hc[0]) {
		if u, ok := strings.CutPrefix(strings.Trim(f, `"`), "http://127.0.0.1:${SHIP_PORT}"); ok {
			if u != "/health" {
				return "", fmt.Errorf("HEALTHCHECK fetches %s; ship serves /health", u)
			}
			return "http://127.0.0.1:" + port + u, nil
		}
	}
	return "", fmt.Errorf("HEALTHCHECK %q fetches no http://127.0.0.1:${SHIP_PORT}/… URL", hc[0])
}

// TestImageQuickStart is the quick start as the image runs it, without a
// container engine: the binary built by the Dockerfile's own build command
// (static, version facts passed as build arguments), as user 10001, with a
// read-only root and only /project writable (bubblewrap, when the test runs
// as root and bwrap works; else as the current user in a plain folder),
// listening on 0.0.0.0 as the image's ENV says: `ship init .`, then
// `ship start --offline`, the HEALTHCHECK's URL, /api/execute, SIGTERM.
func TestImageQuickStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ship: not in -short")
	}
	lines := dockerfile(t)
	work, err := os.MkdirTemp("", "ship-image-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	// uid 10001 must reach the binary and the project folder.
	if err := os.Chmod(work, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(work, "ship")
	const commit = "0123456789abcdef0123456789abcdef01234567"
	build := buildCommand(t, lines)
	build = strings.NewReplacer("${VERSION}", "v9.9.9-test", "${COMMIT}", commit, "${BUILD_TIME}", "2026-11-27T00:00:00Z", "/out/ship", bin).Replace(build)
	cmd := exec.Command("sh", "-c", build)
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the Dockerfile's build command failed: %v\n%s\n%s", err, build, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary is dynamically linked: the image's final stage needs it static")
		}
	}
	f.Close()

	project := filepath.Join(work, "project")
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	run := containerLike(t, bin, project)

	var v struct{ Version, Commit string }
	out, err := run("version", "--json").Output()
	if err != nil || json.Unmarshal(out, &v) != nil || v.Version != "v9.9.9-test" || v.Commit != commit {
		t.Errorf("ship version --json: %v %s; want the build arguments", err, out)
	}
	if out, err := run("init", ".").CombinedOutput(); err != nil || !strings.Contains(string(out), "Created Agent.md, ship.json") {
		t.Fatalf("ship init .: %v\n%s", err, out)
	}

	port := strconv.Itoa(freePort(t))
	token := rand.Text() + rand.Text() // ship refuses a guessable token on 0.0.0.0
	var logs logbuf.Buffer             // written by the process while the test reads it
	start := run("start", "--offline")
	start.Env = append(start.Env, "SHIP_HOST=0.0.0.0", "SHIP_PORT="+port, "SHIP_API_TOKEN="+token)
	start.Stdout, start.Stderr = &logs, &logs
	if err := start.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = start.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = start.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("ship start:\n%s", logs.String())
		}
	})

	health, err := healthURL(lines, port)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the health check to pass", exited, func() bool {
		resp, err := http.Get(health)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	body := `{"instructions":"hello","chatId":"demo"}`
	if status, _ := post(t, "http://127.0.0.1:"+port+"/api/execute", "", body); status != http.StatusUnauthorized {
		t.Errorf("/api/execute without the token: %d, want 401", status)
	}
	status, reply := post(t, "http://127.0.0.1:"+port+"/api/execute", token, body)
	if status != http.StatusOK || !strings.Contains(reply, `"replies":["[offline model] You said: \"hello\"."]`) {
		t.Errorf("/api/execute: %d %s", status, reply)
	}
	if _, err := os.Stat(filepath.Join(project, ".ship", "chats", "api_chat_demo.jsonl")); err != nil {
		t.Errorf("the chat log is not in the project folder: %v", err)
	}
	if strings.Contains(logs.String(), token) {
		t.Error("the API token appears in the log")
	}

	// docker stop sends SIGTERM: ship stops cleanly.
	if err := terminate(start.Process.Pid); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Errorf("after SIGTERM: %v", waitErr)
		}
	case <-time.After(hangGuard):
		t.Fatal("ship did not stop within the hang guard after SIGTERM")
	}
}

// containerLike returns a maker of commands that run the binary as the
// image would. As root with bwrap and setpriv: user 10001, a read-only
// root with only /project (the project folder) and a /tmp tmpfs writable,
// its own user, mount, IPC, UTS and PID namespaces, the host's network.
// Otherwise the binary runs as the current user in the project folder.
func containerLike(t *testing.T, bin, project string) func(args ...string) *exec.Cmd {
	t.Helper()
	env := []string{"PATH=/usr/bin:/bin", "HOME=/project"}
	bwrap, errB := exec.LookPath("bwrap")
	setpriv, errS := exec.LookPath("setpriv")
	plain := func(args ...string) *exec.Cmd {
		c := exec.Command(bin, args...)
		c.Dir, c.Env = project, env
		return c
	}
	if os.Getuid() != 0 || errB != nil || errS != nil {
		t.Logf("not root, or no bwrap/setpriv: running ship as uid %d in %s, without a read-only root", os.Getuid(), project)
		return plain
	}
	if err := os.Chown(project, 10001, 10001); err != nil {
		t.Fatal(err)
	}
	sandbox := []string{"--reuid", "10001", "--regid", "10001", "--clear-groups", bwrap,
		"--tmpfs", "/", "--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc",
		"--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
		"--tmpfs", "/tmp", "--proc", "/proc", "--dev", "/dev",
		"--bind", project, "/project", "--ro-bind", bin, "/opt/ship/bin/ship", "--remount-ro", "/",
		"--unshare-all", "--share-net", "--die-with-parent", "--chdir", "/project", "--", "/opt/ship/bin/ship"}
	// What runs in the sandbox follows "--"; a probe runs its own command.
	inside := func(args ...string) []string { return append(slices.Clone(sandbox[:len(sandbox)-1]), args...) }
	probe := exec.Command(setpriv, inside("/usr/bin/test", "-w", "/project")...)
	if out, err := probe.CombinedOutput(); err != nil {
		// The kernel may refuse user namespaces to a user that is not
		// root; where CI promises a working sandbox, that is a failure.
		if os.Getenv("SHIP_REQUIRE_SANDBOX") == "1" {
			t.Fatalf("bwrap is here but the container-like sandbox does not start as uid 10001: %v\n%s", err, out)
		}
		t.Logf("the container-like sandbox does not start as uid 10001 (%v: %s): running ship as root in %s", err, out, project)
		return plain
	}
	if out, err := exec.Command(setpriv, inside("/usr/bin/touch", "/etc/x")...).CombinedOutput(); err == nil {
		t.Fatalf("the root is writable in the sandbox:\n%s", out)
	}
	t.Log("running ship as uid 10001 with a read-only root; only /project is writable")
	return func(args ...string) *exec.Cmd {
		c := exec.Command(setpriv, append(slices.Clone(sandbox), args...)...)
		c.Env = env
		return c
	}
}

// terminate sends SIGTERM to ship: pid itself, or, when pid is the
// sandbox (bwrap does not pass signals on), the ship process inside it.
func terminate(pid int) error {
	target, err := findShip(pid)
	if err != nil {
		return err
	}
	return syscall.Kill(target, syscall.SIGTERM)
}

// findShip is pid or its first descendant whose command is ship.
func findShip(pid int) (int, error) {
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p)); err == nil && strings.TrimSpace(string(comm)) == "ship" {
			return p, nil
		}
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", p))
		for _, task := range tasks {
			kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", p, task.Name()))
			for _, k := range strings.Fields(string(kids)) {
				if n, err := strconv.Atoi(k); err == nil {
					queue = append(queue, n)
				}
			}
		}
	}
	return 0, errors.New("no ship process under the sandbox")
}

func post(t *testing.T, url, token, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitFor polls cond with a short backoff until it holds, the process
// exits, or the hang guard passes.
func waitFor(t *testing.T, what string, exited <-chan struct{}, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for delay := 5 * time.Millisecond; !cond(); delay = min(2*delay, 200*time.Millisecond) {
		select {
		case <-exited:
			t.Fatalf("ship exited while waiting for %s", what)
		case <-time.After(delay):
		}
		if time.Now().After(deadline) {
			t.Fatalf("hang guard: still waiting for %s after %s", what, hangGuard)
		}
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
