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
)

// exitBudget is how long a ship process may take to exit after SIGTERM
// (what service managers allow).
const exitBudget = 10 * time.Second

// proc is a running `ship start`.
type proc struct {
	name   string // the replica's name, or "single"
	cmd    *exec.Cmd
	url    string // http://127.0.0.1:<port>
	stderr *tailBuffer
	exited chan struct{} // closed once the process has exited
}

// launch starts `ship start <dir> --port <port>` with env and returns at
// once; the process is killed if ctx ends first.
func launch(ctx context.Context, bin, name, dir string, port int, env []string) (*proc, error) {
	p := &proc{
		name:   name,
		url:    "http://127.0.0.1:" + strconv.Itoa(port),
		stderr: &tailBuffer{max: 8 << 10},
		exited: make(chan struct{}),
	}
	p.cmd = exec.CommandContext(ctx, bin, "start", dir, "--port", strconv.Itoa(port))
	p.cmd.Env = env
	p.cmd.Stdout = io.Discard
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting ship %s: %w", name, err)
	}
	go func() {
		_ = p.cmd.Wait() // the status is read from ProcessState
		close(p.exited)
	}()
	return p, nil
}

// waitReady polls GET /health until it answers 200, the process exits or
// ctx ends.
func (p *proc) waitReady(ctx context.Context, client *http.Client) error {
	return p.poll(ctx, "GET /health answering 200", func() bool {
		resp, err := get(ctx, client, p.url+"/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// waitReplicas polls GET /api/status until its cluster.replicas lists n
// replicas.
func (p *proc) waitReplicas(ctx context.Context, client *http.Client, n int) error {
	return p.poll(ctx, fmt.Sprintf("/api/status listing %d replicas", n), func() bool {
		resp, err := get(ctx, client, p.url+"/api/status")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var st struct {
			Cluster *struct {
				Replicas []json.RawMessage `json:"replicas"`
			} `json:"cluster"`
		}
		return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&st) == nil &&
			st.Cluster != nil && len(st.Cluster.Replicas) == n
	})
}

// poll calls cond every 20 ms until it is true, the process exits or ctx
// ends; what names the wait in the error.
func (p *proc) poll(ctx context.Context, what string, cond func() bool) error {
	for !cond() {
		select {
		case <-p.exited:
			// ship's last line says why it stopped; measure adds the tails.
			tail := p.stderr.String()
			return fmt.Errorf("%s exited with status %d while waiting for %s: %s",
				p.name, p.cmd.ProcessState.ExitCode(), what, tail[strings.LastIndex(tail, "\n")+1:])
		case <-ctx.Done():
			return fmt.Errorf("%s: waiting for %s: %w", p.name, what, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

func get(ctx context.Context, client *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	return client.Do(req)
}

// terminate sends SIGTERM; wait then reads the outcome.
func (p *proc) terminate() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM) // an exited process is reported by wait
}

// wait waits for the process to exit and checks it exited 0.
func (p *proc) wait() error {
	select {
	case <-p.exited:
	case <-time.After(exitBudget):
		p.kill()
		return fmt.Errorf("%s did not exit within %s of SIGTERM", p.name, exitBudget)
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		return fmt.Errorf("%s exited with status %d after SIGTERM: %s", p.name, code, p.stderr.String())
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

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// initProject runs `ship init dir` and then sets sections of ship.json.
func initProject(ctx context.Context, bin, dir string, sections map[string]any) error {
	out, err := exec.CommandContext(ctx, bin, "init", dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ship init %s: %w: %s", dir, err, out)
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
	for k, v := range sections {
		doc[k] = v
	}
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
