package mcp

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/runtime/secrets"
)

// terminateAfter is how long a stdio server may take to exit once its
// stdin is closed before it is sent SIGTERM (and as long again before it
// is killed): short enough for ship's shutdown budget.
const terminateAfter = time.Second

// transport builds the way to reach the server: a child process on stdio
// or streamable HTTP. For stdio it also returns the child's stderr.
func (s *server) transport() (sdk.Transport, *stderrTail, error) {
	if s.cfg.URL != "" {
		client := &http.Client{Transport: &withHeaders{base: http.DefaultTransport, headers: s.cfg.Headers}}
		return &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: client}, nil, nil
	}
	cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
	cmd.Dir = s.m.opts.Dir
	if s.cfg.Cwd != "" {
		cmd.Dir = s.cfg.Cwd
		if !filepath.IsAbs(s.cfg.Cwd) {
			cmd.Dir = filepath.Join(s.m.opts.Dir, s.cfg.Cwd)
		}
	}
	cmd.Env = childEnv(os.Environ(), s.m.opts.DropEnv, s.cfg.Env)
	tail := &stderrTail{log: s.log, redact: s.redact}
	cmd.Stderr = tail
	// A grandchild that inherited stderr (npx → node) must not keep Wait,
	// and so the restart or the shutdown, waiting for the pipe to close.
	cmd.WaitDelay = terminateAfter
	detach(cmd)
	return &sdk.CommandTransport{Command: cmd, TerminateDuration: terminateAfter}, tail, nil
}

// childEnv is ship's environment without the dropped (secret) variables,
// with the server's own env on top, in a stable order.
func childEnv(parent, drop []string, own map[string]string) []string {
	out := make([]string, 0, len(parent)+len(own))
	for _, kv := range parent {
		k, _, _ := strings.Cut(kv, "=")
		if slices.Contains(drop, k) {
			continue
		}
		if _, set := own[k]; set {
			continue
		}
		out = append(out, kv)
	}
	keys := make([]string, 0, len(own))
	for k := range own {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+own[k])
	}
	return out
}

// withHeaders adds the configured headers to every request to the server.
type withHeaders struct {
	base    http.RoundTripper
	headers map[string]string
}

// RoundTrip implements http.RoundTripper.
func (h *withHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) == 0 {
		return h.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		if strings.EqualFold(k, "Host") {
			r.Host = v
			continue
		}
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}

// redactor hides secret values in text bound for a log line, an error or
// /api/status: ship's secrets, the server's env and header values, and
// whatever the URL carries besides its scheme, host and path.
type redactor struct {
	secrets *secrets.Set
	rawURL  string
	safeURL string
}

func newRedactor(cfg config.MCPServer, shipSecrets []string) *redactor {
	r := &redactor{}
	values := slices.Clone(shipSecrets)
	for _, v := range cfg.Env {
		values = append(values, v)
	}
	for _, v := range cfg.Headers {
		values = append(values, v)
		values = append(values, strings.Fields(v)...) // the token of "Bearer <token>"
	}
	if u, err := url.Parse(cfg.URL); err == nil && cfg.URL != "" {
		if p, ok := u.User.Password(); ok {
			values = append(values, p)
		}
		for _, vs := range u.Query() {
			values = append(values, vs...)
		}
		r.rawURL = cfg.URL
		r.safeURL = (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
	}
	r.secrets = secrets.New(values)
	return r
}

func (r *redactor) text(s string) string {
	if r.rawURL != "" && r.rawURL != r.safeURL {
		s = strings.ReplaceAll(s, r.rawURL, r.safeURL)
	}
	return r.secrets.Redact(s)
}

// stderrTail takes a stdio server's stderr: each line goes to the debug
// log, and the last few are kept to explain a failure.
type stderrTail struct {
	log    zerolog.Logger
	redact *redactor

	mu      sync.Mutex
	partial []byte
	last    []string
}

const (
	keepLines   = 3
	maxLineKept = 300
)

// Write implements io.Writer.
func (t *stderrTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.partial = append(t.partial, p...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			break
		}
		t.line(string(t.partial[:i]))
		t.partial = t.partial[i+1:]
	}
	if len(t.partial) > 4*maxLineKept { // a line without end: keep its start
		t.line(string(t.partial))
		t.partial = t.partial[:0]
	}
	return len(p), nil
}

func (t *stderrTail) line(s string) {
	s = strings.TrimSpace(s)
	if s == "" {
		return
	}
	s = clip(t.redact.text(s), maxLineKept)
	t.log.Debug().Str("stderr", s).Msg("mcp server says")
	t.last = append(t.last, s)
	if len(t.last) > keepLines {
		t.last = t.last[1:]
	}
}

// explain adds the server's last stderr line to err; nil-safe (HTTP
// servers have no stderr).
func (t *stderrTail) explain(err error) error {
	if t == nil || err == nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.partial) > 0 {
		t.line(string(t.partial))
		t.partial = t.partial[:0]
	}
	if len(t.last) == 0 {
		return err
	}
	return fmt.Errorf("%w (stderr: %s)", err, t.last[len(t.last)-1])
}
