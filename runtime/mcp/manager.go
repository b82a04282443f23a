// Package mcp connects ship to the MCP servers of ship.json (stdio child
// processes and streamable-HTTP endpoints) with the official Go SDK. A
// Manager keeps one session per server in the background: start-up never
// waits for a server, a server that dies is reconnected with backoff, and a
// tool list the server changes (notifications/tools/list_changed) is read
// again. Tool calls never hang: each has a timeout, and a server that is down
// answers at once with an error that says so.
package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/config"
)

// Server states, as /api/status shows them.
const (
	StateConnecting = "connecting" // the first connection is being made
	StateReady      = "ready"      // connected; its tools are offered
	StateRestarting = "restarting" // the connection was lost; reconnecting
	StateFailed     = "failed"     // the last attempt failed; retrying with backoff
	StateStopped    = "stopped"    // the Manager was closed
)

// Defaults for Options left at zero.
const (
	DefaultMinBackoff     = time.Second
	DefaultMaxBackoff     = time.Minute
	DefaultConnectTimeout = time.Minute
)

// Options configure a Manager.
type Options struct {
	// Servers are ship.json's mcp.servers, by name.
	Servers map[string]config.MCPServer
	// Dir is the project folder: a stdio server's cwd is relative to it.
	Dir string
	// DropEnv names the variables of ship's environment a stdio server
	// never sees (config.SecretEnv); a server's own env may set them again.
	DropEnv []string
	// Secrets are values (ship's tokens, keys) never shown in a log line,
	// an error or /api/status. Every server's env and header values are
	// hidden as well.
	Secrets []string
	// MinBackoff and MaxBackoff bound the wait before a reconnection; it
	// doubles from MinBackoff on every failure, with jitter.
	MinBackoff, MaxBackoff time.Duration
	// ConnectTimeout bounds one connection attempt (start, handshake, tool
	// list); a stdio server fetched by npx on its first start may need long.
	ConnectTimeout time.Duration
	Logger         zerolog.Logger
}

// Tool is one tool an MCP server offers.
type Tool struct {
	Server      string
	Name        string
	Description string
	// InputSchema is the tool's JSON schema for its arguments, as the
	// server sent it.
	InputSchema json.RawMessage
}

// ServerStatus is one server as GET /api/status shows it.
type ServerStatus struct {
	Name      string `json:"name"`
	Transport string `json:"transport"` // stdio or http
	State     string `json:"state"`
	Tools     int    `json:"tools"`
	// LastError says why the server last failed or was lost, without
	// secrets; "" when it never did.
	LastError string `json:"lastError,omitempty"`
	// Since is when the server entered State.
	Since time.Time `json:"since"`
	// Restarts counts the connection attempts after the first one.
	Restarts int `json:"restarts"`
}

// Manager owns the sessions with the configured MCP servers. Create it
// with New, start it with Start, change its servers with Update (a
// configuration reload), stop it with Close.
type Manager struct {
	opts Options

	// setMu guards the server set: Update replaces servers and names
	// whole, readers copy what they need and call the servers unlocked.
	setMu   sync.RWMutex
	servers map[string]*server
	names   []string // sorted

	mu      sync.Mutex
	changed chan struct{}   // closed and replaced on every change
	ctx     context.Context // Start's, for servers Update adds later
	cancel  context.CancelFunc
	started bool
	closed  bool
	wg      sync.WaitGroup
}

// New returns a Manager for opts.Servers; nothing is started yet.
func New(opts Options) *Manager {
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = DefaultMinBackoff
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(DefaultMaxBackoff, opts.MinBackoff)
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	m := &Manager{opts: opts, servers: map[string]*server{}, changed: make(chan struct{})}
	for name, cfg := range opts.Servers {
		m.servers[name] = newServer(m, name, cfg)
		m.names = append(m.names, name)
	}
	slices.Sort(m.names)
	return m
}

// Start connects to every server in the background and returns at once.
// The connections end when ctx ends or Close is called.
func (m *Manager) Start(ctx context.Context) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		return
	}
	m.started = true
	m.ctx, m.cancel = context.WithCancel(ctx)
	m.setMu.RLock()
	defer m.setMu.RUnlock()
	for _, name := range m.names {
		m.launch(m.servers[name])
	}
}

// launch runs s's session loop until s is retired or the Manager
// closed; m.mu is held.
func (m *Manager) launch(s *server) {
	ctx, cancel := context.WithCancel(m.ctx)
	s.cancel, s.done = cancel, make(chan struct{})
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer close(s.done)
		s.run(ctx)
	}()
}

// Update makes servers the configured set (a configuration reload):
// a server added starts, one removed stops, one whose settings changed
// restarts with the new ones. Tools of removed servers are no longer
// offered at once; a call already running on one ends as it would
// (within the server's timeout) before its session is closed, and a new
// call to it is refused with a message that says why. It returns the
// names added, removed and restarted.
func (m *Manager) Update(servers map[string]config.MCPServer) (added, removed, restarted []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, nil, nil
	}
	m.setMu.Lock()
	next := make(map[string]*server, len(servers))
	var retire []*server
	for name, s := range m.servers {
		cfg, keep := servers[name]
		switch {
		case !keep:
			removed = append(removed, name)
			retire = append(retire, s)
		case !reflect.DeepEqual(cfg, s.cfg):
			restarted = append(restarted, name)
			retire = append(retire, s)
		default:
			next[name] = s
		}
	}
	var fresh []*server
	for name, cfg := range servers {
		if _, ok := next[name]; ok {
			continue
		}
		if _, had := m.servers[name]; !had {
			added = append(added, name)
		}
		s := newServer(m, name, cfg)
		next[name] = s
		fresh = append(fresh, s)
	}
	names := make([]string, 0, len(next))
	for name := range next {
		names = append(names, name)
	}
	slices.Sort(names)
	m.servers, m.names = next, names
	m.setMu.Unlock()
	for _, s := range retire {
		m.retire(s)
	}
	if m.started {
		for _, s := range fresh {
			m.launch(s)
		}
	}
	slices.Sort(added)
	slices.Sort(removed)
	slices.Sort(restarted)
	m.notifyLocked()
	return added, removed, restarted
}

// retire stops s once the calls running on it have ended: new calls are
// refused now, the session is closed after the last running one (each
// ends within the server's timeout). m.mu is held.
func (m *Manager) retire(s *server) {
	s.mu.Lock()
	s.retired = true
	s.mu.Unlock()
	if s.cancel == nil {
		return // never started
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		s.calls.Wait()
		s.cancel()
		<-s.done
		s.log.Info().Msg("mcp server stopped: it left the configuration or changed")
	}()
}

// Close ends every session (a stdio server's stdin is closed, then it is
// terminated) and waits until they are gone.
func (m *Manager) Close() {
	m.mu.Lock()
	cancel := m.cancel
	m.started = true // a Start after Close does nothing
	m.closed = true
	m.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	m.wg.Wait()
}

// current returns the servers in force, by name.
func (m *Manager) current() []*server {
	m.setMu.RLock()
	defer m.setMu.RUnlock()
	out := make([]*server, 0, len(m.names))
	for _, name := range m.names {
		out = append(out, m.servers[name])
	}
	return out
}

// Status reports every server, by name.
func (m *Manager) Status() []ServerStatus {
	list := m.current()
	out := make([]ServerStatus, 0, len(list))
	for _, s := range list {
		out = append(out, s.status())
	}
	return out
}

// Tools lists the tools of every server, by server and name. A server
// that was ready once keeps its last tools while it reconnects: a call
// then says the server is down instead of the tool vanishing mid-talk.
func (m *Manager) Tools() []Tool {
	var out []Tool
	for _, s := range m.current() {
		out = append(out, s.toolList()...)
	}
	return out
}

// Changed returns a channel that is closed at the next change of a
// server's state or tools.
func (m *Manager) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

func (m *Manager) notify() {
	m.mu.Lock()
	m.notifyLocked()
	m.mu.Unlock()
}

func (m *Manager) notifyLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// Result is a tool call's answer as the model should see it.
type Result struct {
	// Text is the server's text content, with other content described.
	Text string
	// IsError is the server's verdict: the tool ran and failed.
	IsError bool
}

// CallTool calls tool on server with args (a JSON object). The error says,
// in words fit for the model, why there is no answer: the server is down,
// did not answer in time, or refused the call. It never waits longer than
// the server's timeout.
func (m *Manager) CallTool(ctx context.Context, server, tool string, args json.RawMessage) (Result, error) {
	return m.CallToolWithin(ctx, server, tool, args, 0)
}

// CallToolWithin is CallTool bounded by timeout instead of the server's
// timeoutSeconds (when timeout > 0): a call run as a background job has
// the job's timeout.
func (m *Manager) CallToolWithin(ctx context.Context, server, tool string, args json.RawMessage, timeout time.Duration) (Result, error) {
	m.setMu.RLock()
	s, ok := m.servers[server]
	m.setMu.RUnlock()
	if !ok {
		return Result{}, fmt.Errorf("there is no mcp server %q", server)
	}
	if timeout <= 0 {
		timeout = s.timeout
	}
	return s.call(ctx, tool, args, timeout)
}

// clip cuts s to n bytes at a rune boundary, saying so.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d bytes cut)", len(s)-cut)
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
