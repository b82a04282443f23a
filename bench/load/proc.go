package main

import (
	"context"
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

// exitBudget is how long a ship process may take to exit after SIGTERM
// (what service managers allow).
const exitBudget = 10 * time.Second

// proc is a running `ship start`.
type proc struct {
	cmd    *exec.Cmd
	url    string // http://127.0.0.1:<port>
	stderr *tailBuffer
	exited chan struct{} // closed once the process has exited
}

// launch starts `ship start <dir> --port <free> args...` with env and
// returns at once; the process is killed if ctx ends first.
func launch(ctx context.Context, bin, dir string, env []string, args ...string) (*proc, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	p := &proc{
		url:    "http://127.0.0.1:" + strconv.Itoa(port),
		stderr: &tailBuffer{max: 8 << 10},
		exited: make(chan struct{}),
	}
	argv := append([]string{"start", dir, "--port", strconv.Itoa(port)}, args...)
	p.cmd = exec.CommandContext(ctx, bin, argv...)
	p.cmd.Env = env
	p.cmd.Stdout = io.Discard
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting ship: %w", err)
	}
	go func() {
		_ = p.cmd.Wait() // the status is read from ProcessState
		close(p.exited)
	}()
	return p, nil
}

// waitReady polls GET /health every interval until it answers 200, the
// process exits or ctx ends.
func (p *proc) waitReady(ctx context.Context, client *http.Client, interval time.Duration) error {
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/health", nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.exited:
			return fmt.Errorf("ship exited with status %d before it was ready: %s",
				p.cmd.ProcessState.ExitCode(), p.stderr.String())
		case <-ctx.Done():
			return fmt.Errorf("waiting for /health: %w", ctx.Err())
		case <-time.After(interval):
		}
	}
}

// stop sends SIGTERM and waits for the process to exit with status 0.
func (p *proc) stop() error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("sending SIGTERM: %w", err)
	}
	select {
	case <-p.exited:
	case <-time.After(exitBudget):
		p.kill()
		return fmt.Errorf("ship did not exit within %s of SIGTERM", exitBudget)
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		return fmt.Errorf("ship exited with status %d after SIGTERM: %s", code, p.stderr.String())
	}
	return nil
}

// kill ends the process if it still runs and waits for it; for error paths.
func (p *proc) kill() {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// memory returns the resident set size and its peak (VmRSS, VmHWM) in bytes,
// read from /proc (Linux only).
func (p *proc) memory() (rss, peak int64, err error) {
	return procstat.Memory(p.cmd.Process.Pid)
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// initProject runs `ship init dir` and then applies edit (if any) to the
// decoded ship.json.
func initProject(ctx context.Context, bin, dir string, edit func(map[string]any)) error {
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

// shipEnv is the parent environment without anything that configures ship,
// plus extra.
func shipEnv(extra ...string) []string {
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
