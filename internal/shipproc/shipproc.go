// Package shipproc runs the real ship binary as a child process for the
// bench programs: build it, make a project, start it on a free port, wait
// until it answers, read its memory, stop it and check it exited cleanly.
package shipproc

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shipmyagent/ship/internal/procstat"
)

// ExitBudget is how long a ship process may take to exit after SIGTERM
// (what service managers allow).
const ExitBudget = 10 * time.Second

// Proc is a running `ship start`.
type Proc struct {
	Name   string // what errors call it ("ship", a replica's name)
	URL    string // http://127.0.0.1:<port>
	cmd    *exec.Cmd
	stderr *tailBuffer
	exited chan struct{} // closed once the process has exited
}

// Launch starts `ship start <dir> --port <port> args...` with env and
// returns at once (port 0 picks a free one); the process is killed if ctx
// ends first.
func Launch(ctx context.Context, bin, name, dir string, port int, env []string, args ...string) (*Proc, error) {
	if port == 0 {
		var err error
		if port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	p := &Proc{
		Name:   name,
		URL:    "http://127.0.0.1:" + strconv.Itoa(port),
		stderr: &tailBuffer{max: 8 << 10},
		exited: make(chan struct{}),
	}
	argv := append([]string{"start", dir, "--port", strconv.Itoa(port)}, args...)
	p.cmd = exec.CommandContext(ctx, bin, argv...)
	p.cmd.Env = env
	p.cmd.Stdout = io.Discard
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		_ = p.cmd.Wait() // the status is read from ProcessState
		close(p.exited)
	}()
	return p, nil
}

// WaitReady polls GET /health every interval until it answers 200, the
// process exits or ctx ends.
func (p *Proc) WaitReady(ctx context.Context, client *http.Client, interval time.Duration) error {
	return p.Poll(ctx, "GET /health answering 200", interval, func() bool {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/health", nil)
		if err != nil {
			return false
		}
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// Poll calls cond every interval until it is true, the process exits or
// ctx ends; what names the wait in the error.
func (p *Proc) Poll(ctx context.Context, what string, interval time.Duration, cond func() bool) error {
	for !cond() {
		select {
		case <-p.exited:
			// ship's last line says why it stopped; Stderr has the rest.
			tail := p.stderr.String()
			return fmt.Errorf("%s exited with status %d while waiting for %s: %s",
				p.Name, p.cmd.ProcessState.ExitCode(), what, tail[strings.LastIndex(tail, "\n")+1:])
		case <-ctx.Done():
			return fmt.Errorf("%s: waiting for %s: %w", p.Name, what, ctx.Err())
		case <-time.After(interval):
		}
	}
	return nil
}

// Terminate sends SIGTERM; Wait then reads the outcome.
func (p *Proc) Terminate() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM) // an exited process is reported by Wait
}

// Wait waits up to ExitBudget for the process to exit and checks it
// exited 0.
func (p *Proc) Wait() error {
	select {
	case <-p.exited:
	case <-time.After(ExitBudget):
		p.Kill()
		return fmt.Errorf("%s did not exit within %s of SIGTERM", p.Name, ExitBudget)
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		return fmt.Errorf("%s exited with status %d after SIGTERM: %s", p.Name, code, p.stderr.String())
	}
	return nil
}

// Stop sends SIGTERM and waits for the process to exit with status 0.
func (p *Proc) Stop() error {
	p.Terminate()
	return p.Wait()
}

// Kill ends the process if it still runs and waits for it; for error paths.
func (p *Proc) Kill() {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// Memory returns the resident set size and its peak (VmRSS, VmHWM) in
// bytes, read from /proc (Linux only).
func (p *Proc) Memory() (rss, peak int64, err error) {
	return procstat.Memory(p.cmd.Process.Pid)
}

// CPUTime is the CPU time the process has used so far (all threads).
func (p *Proc) CPUTime() (time.Duration, error) {
	return procstat.CPUTime(p.cmd.Process.Pid)
}

// Stderr is the last 8 KiB the process wrote to stderr.
func (p *Proc) Stderr() string { return p.stderr.String() }

// PostJSON posts body as JSON to url and returns the answer's status and
// body.
func PostJSON(ctx context.Context, client *http.Client, url string, body any) (int, []byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("reading the answer: %w", err)
	}
	return resp.StatusCode, raw, nil
}

// FreePort returns a loopback port that was free a moment ago.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Build builds ./cmd/ship into dir as a user does (`go build`, no tags)
// and returns the binary's path.
func Build(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "ship")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/shipmyagent/ship/cmd/ship").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building ship (run from the module, or pass -bin): %w\n%s", err, out)
	}
	return bin, nil
}

// Init runs `ship init dir` and then applies edit (if any) to the decoded
// ship.json.
func Init(ctx context.Context, bin, dir string, edit func(map[string]any)) error {
	out, err := exec.CommandContext(ctx, bin, "init", dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ship init %s: %w: %s", dir, err, out)
	}
	if edit == nil {
		return nil
	}
	path := filepath.Join(dir, "ship.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	edit(doc)
	raw, err = json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}

// Env is the parent environment without anything that configures ship,
// plus extra.
func Env(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "LLM_"), strings.HasPrefix(name, "SHIP_"),
			strings.HasPrefix(name, "TELEGRAM_"), strings.HasPrefix(name, "FEISHU_"),
			strings.HasPrefix(name, "QQ_"):
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// Versions returns `ship version` and the Go version bin was built with,
// or "unknown".
func Versions(bin string) (ship, goVersion string) {
	ship, goVersion = "unknown", "unknown"
	if out, err := exec.Command(bin, "version").Output(); err == nil {
		ship = strings.TrimPrefix(strings.TrimSpace(string(out)), "ship ")
	}
	if info, err := buildinfo.ReadFile(bin); err == nil {
		goVersion = info.GoVersion
	}
	return ship, goVersion
}

// CPUModel is the first "model name" of /proc/cpuinfo, or "unknown CPU".
func CPUModel() string {
	raw, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for line := range strings.Lines(string(raw)) {
		if name, value, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "model name" {
			return strings.TrimSpace(value)
		}
	}
	return "unknown CPU"
}

// tailBuffer keeps the last max bytes written to it, for error messages.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}
