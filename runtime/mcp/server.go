package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/config"
)

// stableAfter is how long a session must have lasted for the next
// reconnection to start again from the shortest wait: a server that dies
// right after every start is retried ever more slowly.
const stableAfter = 30 * time.Second

// server is one configured MCP server and its session.
type server struct {
	m       *Manager
	name    string
	cfg     config.MCPServer
	timeout time.Duration
	redact  *redactor
	log     zerolog.Logger
	// refresh asks the session loop to read the tool list again.
	refresh chan struct{}
	// cancel ends the session loop and done is closed when it has
	// (Manager.launch); calls counts the calls running on the session,
	// which a retired server lets end before it stops.
	cancel context.CancelFunc
	done   chan struct{}
	calls  sync.WaitGroup

	mu       sync.Mutex
	state    string
	since    time.Time
	lastErr  string
	tools    []Tool
	restarts int
	sess     *sdk.ClientSession // nil unless ready
	// broken is closed by a call that found the session's connection
	// gone (an HTTP server that stopped answering), so the loop
	// reconnects without waiting for the SDK to notice.
	broken     chan struct{}
	brokenOnce *sync.Once
	// retired: the server left the configuration (or changed); it takes
	// no new call.
	retired bool
}

func newServer(m *Manager, name string, cfg config.MCPServer) *server {
	return &server{
		m: m, name: name, cfg: cfg, timeout: cfg.CallTimeout(),
		redact:  newRedactor(cfg, m.opts.Secrets),
		log:     m.opts.Logger.With().Str("server", name).Str("transport", cfg.Transport()).Logger(),
		refresh: make(chan struct{}, 1),
		state:   StateConnecting, since: time.Now(),
	}
}

// run keeps a session with the server until ctx ends.
func (s *server) run(ctx context.Context) {
	attempt := 0
	for {
		readyAt, err := s.session(ctx)
		if ctx.Err() != nil {
			s.set(StateStopped, "", nil)
			return
		}
		msg := s.redact.text(err.Error())
		if !readyAt.IsZero() && time.Since(readyAt) >= stableAfter {
			attempt = 0
		}
		wait := backoff(s.m.opts.MinBackoff, s.m.opts.MaxBackoff, attempt)
		attempt++
		if readyAt.IsZero() {
			s.set(StateFailed, msg, nil)
			s.log.Warn().Str("error", msg).Dur("retryIn", wait).Msg("mcp server unavailable; retrying")
		} else {
			s.set(StateRestarting, msg, nil)
			s.log.Warn().Str("error", msg).Dur("retryIn", wait).Msg("mcp server connection lost; reconnecting")
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			s.set(StateStopped, "", nil)
			return
		case <-t.C:
		}
		s.mu.Lock()
		s.restarts++
		s.mu.Unlock()
	}
}

// session connects, lists the tools and serves until the session ends. It
// returns when the server became ready (zero if it never did) and why the
// session ended.
func (s *server) session(ctx context.Context) (readyAt time.Time, err error) {
	client := sdk.NewClient(&sdk.Implementation{Name: "ship", Version: "1"}, &sdk.ClientOptions{
		// The SDK may call this from its reading loop: hand it off, never block.
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { s.askRefresh() },
		// ship offers the server nothing (no roots, sampling, elicitation).
		Capabilities: &sdk.ClientCapabilities{},
	})
	transport, stderr, err := s.transport()
	if err != nil {
		return time.Time{}, err
	}
	// Runs last, once the process is gone and its stderr read to the end:
	// its last words usually say why it failed.
	defer func() { err = stderr.explain(err) }()
	connCtx, cancel := context.WithTimeout(ctx, s.m.opts.ConnectTimeout)
	defer cancel()
	sess, err := client.Connect(connCtx, transport, nil)
	if err != nil {
		return time.Time{}, fmt.Errorf("connecting: %w", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- sess.Wait() }()
	defer func() {
		s.detach()
		_ = sess.Close() // a stdio server: stdin closed, then SIGTERM, then kill
		<-waited
	}()
	tools, err := s.list(connCtx, sess)
	if err != nil {
		return time.Time{}, err
	}
	cancel()
	broken := s.ready(sess, tools)
	readyAt = time.Now()
	for {
		select {
		case <-ctx.Done():
			return readyAt, ctx.Err()
		case err := <-waited:
			waited <- err // for the deferred wait
			if err == nil {
				err = errors.New("the server closed the connection")
			}
			return readyAt, fmt.Errorf("connection lost: %w", err)
		case <-broken:
			return readyAt, errors.New("connection lost during a call")
		case <-s.refresh:
			lctx, lcancel := context.WithTimeout(ctx, s.timeout)
			tools, err := s.list(lctx, sess)
			lcancel()
			if err != nil {
				// The next change (or reconnection) reads it again.
				s.log.Warn().Str("error", s.redact.text(err.Error())).Msg("reading the changed mcp tool list")
				continue
			}
			s.setTools(tools)
		}
	}
}

// list reads the server's tools, page by page.
func (s *server) list(ctx context.Context, sess *sdk.ClientSession) ([]Tool, error) {
	out := []Tool{} // not nil: a server may come back with no tools at all
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("listing tools: %w", err)
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil || t.InputSchema == nil {
			schema = []byte(`{"type":"object"}`)
		}
		out = append(out, Tool{Server: s.name, Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	return out, nil
}

func (s *server) askRefresh() {
	select {
	case s.refresh <- struct{}{}:
	default: // one is pending already
	}
}

// ready makes sess the session calls use and returns the channel a call
// closes when it finds the connection gone.
func (s *server) ready(sess *sdk.ClientSession, tools []Tool) <-chan struct{} {
	s.mu.Lock()
	s.sess = sess
	s.broken, s.brokenOnce = make(chan struct{}), &sync.Once{}
	broken := s.broken
	s.mu.Unlock()
	s.set(StateReady, "", tools)
	s.log.Info().Int("tools", len(tools)).Msg("mcp server ready")
	return broken
}

func (s *server) setTools(tools []Tool) {
	s.mu.Lock()
	s.tools = tools
	s.mu.Unlock()
	s.log.Info().Int("tools", len(tools)).Msg("mcp tool list changed")
	s.m.notify()
}

// detach stops calls from using the current session.
func (s *server) detach() {
	s.mu.Lock()
	s.sess = nil
	s.mu.Unlock()
}

// set records a new state; tools replace the list when not nil, and a
// stopped server offers none.
func (s *server) set(state, lastErr string, tools []Tool) {
	s.mu.Lock()
	if s.state != state {
		s.since = time.Now()
	}
	s.state = state
	if lastErr != "" {
		s.lastErr = lastErr
	}
	if tools != nil || state == StateStopped {
		s.tools = tools
	}
	s.mu.Unlock()
	s.m.notify()
}

func (s *server) status() ServerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ServerStatus{Name: s.name, Transport: s.cfg.Transport(), State: s.state, Tools: len(s.tools),
		LastError: s.lastErr, Since: s.since, Restarts: s.restarts}
}

func (s *server) toolList() []Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools // replaced, never changed in place
}

// call runs one tool call on the current session.
func (s *server) call(ctx context.Context, tool string, args json.RawMessage, timeout time.Duration) (Result, error) {
	s.mu.Lock()
	sess, state, lastErr, broken := s.sess, s.state, s.lastErr, s.brokenOnce
	if s.retired {
		s.mu.Unlock()
		return Result{}, fmt.Errorf("mcp server %s was removed or changed in ship.json while this turn ran; its tools are gone until the next turn", s.name)
	}
	if sess != nil {
		s.calls.Add(1) // under mu: retire sets retired before it waits
		defer s.calls.Done()
	}
	s.mu.Unlock()
	if sess == nil {
		why := state
		if lastErr != "" {
			why = lastErr
		}
		return Result{}, fmt.Errorf("mcp server %s is down: %s; try later", s.name, why)
	}
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	started := time.Now()
	res, err := sess.CallTool(callCtx, &sdk.CallToolParams{Name: tool, Arguments: args})
	log := s.log.With().Str("tool", tool).Dur("took", time.Since(started)).Logger()
	var rpcErr *jsonrpc.Error
	switch {
	case err == nil:
		return format(res), nil
	case ctx.Err() != nil:
		return Result{}, fmt.Errorf("calling %s on mcp server %s: %w", tool, s.name, ctx.Err())
	case callCtx.Err() != nil:
		log.Warn().Dur("timeout", timeout).Msg("mcp tool call timed out")
		return Result{}, fmt.Errorf("mcp server %s did not answer %s within %s; try later, or ask for less", s.name, tool, timeout)
	case errors.As(err, &rpcErr) && !localCode(rpcErr.Code) && !errors.Is(err, sdk.ErrConnectionClosed):
		// The server is fine; it said no (unknown tool, bad arguments).
		return Result{}, fmt.Errorf("mcp server %s refused the call to %s: %s", s.name, tool, s.redact.text(rpcErr.Message))
	}
	msg := s.redact.text(err.Error())
	log.Warn().Str("error", msg).Msg("mcp tool call failed; reconnecting")
	s.markBroken(broken)
	return Result{}, fmt.Errorf("mcp server %s is down: the connection failed during the call (%s); try later", s.name, msg)
}

// localCode reports whether a JSON-RPC error code is the SDK's own word
// for a connection that failed (rejected by the transport, closing),
// rather than the server's answer.
func localCode(code int64) bool {
	switch code {
	case -32005, -32004, -32003: // rejected by transport, server closing, client closing
		return true
	}
	return false
}

// markBroken tells the session loop that the session it handed out (whose
// Once this is) is gone; a newer session is left alone.
func (s *server) markBroken(once *sync.Once) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if once != s.brokenOnce || once == nil {
		return
	}
	once.Do(func() { close(s.broken) })
}

// backoff is the wait before reconnection attempt n (from 0): lo doubled
// n times, at most hi, with up to half of it taken off at random so that
// servers that fell together do not come back in lockstep.
func backoff(lo, hi time.Duration, n int) time.Duration {
	d := lo
	for i := 0; i < n && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	return d/2 + rand.N(d/2+1)
}
