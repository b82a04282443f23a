package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/internal/fakemcp"
	"github.com/shipmyagent/ship/internal/logbuf"
	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/runtime/mcp"
)

// fakeBin is the stdio fake, built once for the package's tests.
var fakeBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fakemcp-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fakeBin, err = fakemcp.Build(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// hangGuard bounds every wait of a test: a bug shows as a failure, not a
// hung test binary.
const hangGuard = 20 * time.Second

type rig struct {
	t    *testing.T
	m    *mcp.Manager
	logs *logbuf.Buffer
	dir  string
}

func start(t *testing.T, servers map[string]config.MCPServer, opts ...func(*mcp.Options)) *rig {
	t.Helper()
	r := &rig{t: t, logs: &logbuf.Buffer{}, dir: t.TempDir()}
	o := mcp.Options{
		Servers: servers, Dir: r.dir, DropEnv: config.SecretEnv,
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
		Logger: zerolog.New(zerolog.MultiLevelWriter(zerolog.NewTestWriter(t), r.logs)).Level(zerolog.DebugLevel),
	}
	for _, f := range opts {
		f(&o)
	}
	r.m = mcp.New(o)
	r.m.Start(context.Background())
	t.Cleanup(r.close)
	return r
}

// close stops the manager, failing the test if that hangs.
func (r *rig) close() {
	done := make(chan struct{})
	go func() { r.m.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(hangGuard):
		r.t.Fatal("Manager.Close hung")
	}
}

// waitFor waits until cond holds, re-checking on every change the manager
// reports.
func (r *rig) waitFor(what string, cond func() bool) {
	r.t.Helper()
	deadline := time.After(hangGuard)
	for {
		changed := r.m.Changed()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			r.t.Fatalf("waiting for %s; status %+v", what, r.m.Status())
		}
	}
}

func (r *rig) status(name string) mcp.ServerStatus {
	for _, s := range r.m.Status() {
		if s.Name == name {
			return s
		}
	}
	r.t.Fatalf("no server %s in %+v", name, r.m.Status())
	return mcp.ServerStatus{}
}

func (r *rig) waitState(name, state string) mcp.ServerStatus {
	r.t.Helper()
	r.waitFor(name+" "+state, func() bool { return r.status(name).State == state })
	return r.status(name)
}

func (r *rig) call(server, tool, args string) (mcp.Result, error) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	return r.m.CallTool(ctx, server, tool, json.RawMessage(args))
}

// mustCall calls a tool that must answer with text.
func (r *rig) mustCall(server, tool, args string) string {
	r.t.Helper()
	res, err := r.call(server, tool, args)
	if err != nil || res.IsError {
		r.t.Fatalf("%s.%s(%s) = %+v, %v", server, tool, args, res, err)
	}
	return res.Text
}

func (r *rig) hasTool(server, name string) bool {
	for _, t := range r.m.Tools() {
		if t.Server == server && t.Name == name {
			return true
		}
	}
	return false
}

func stdio(args ...string) config.MCPServer {
	return config.MCPServer{Command: fakeBin, Args: args}
}

func httpFake(t *testing.T, o fakemcp.HTTPOptions) *fakemcp.HTTP {
	h := fakemcp.StartHTTP(o)
	t.Cleanup(h.Close)
	return h
}

func mustContain(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s = %q, want it to contain %q", what, got, w)
		}
	}
}
