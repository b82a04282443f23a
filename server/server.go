// Package server is ship's HTTP API: liveness, status and
// POST /api/execute, which runs a turn in the "api" channel through the same
// global queue as every platform and answers with the run's result and the
// replies the agent sent. It is a channel like the platforms: it acts on the
// core only through engine.Door and reads it only through engine.View.
package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/mcp"
	"github.com/shipmyagent/ship/runtime/media"
	"github.com/shipmyagent/ship/server/console"
	"github.com/shipmyagent/ship/server/internal/throttle"
)

// Defaults for Options left at zero.
const (
	defaultMaxBodyBytes        = 1 << 20
	defaultMaxInstructionChars = 10_000
)

// AdapterStatus is one platform adapter as shown by GET /api/status.
type AdapterStatus = adapters.Status

// MCPStatus is one MCP server as shown by GET /api/status.
type MCPStatus = mcp.ServerStatus

// ConfigStatus is ship.json's reload state as shown by GET /api/status.
type ConfigStatus = console.ConfigStatus

// Options configure a Server.
type Options struct {
	// Door is how the API acts on the core: the front door, run events,
	// the api channel's dispatcher, approvals; required (the Engine).
	Door engine.Door
	// View is what the API reads of the core: queue, chat logs, tools,
	// approvals, models; required (the Engine).
	View engine.View
	// Token is the bearer token every /api route requires; its holder acts
	// as chat.APIToken in the tool policy. With neither it nor Tokens set,
	// auth is off and every caller is chat.APIAnonymous.
	Token string
	// Tokens are more bearer tokens, each acting as its own identity.
	Tokens  []NamedToken
	Version string
	// Started is when the process started (uptime is measured from it);
	// zero means when New was called.
	Started time.Time
	// Model is "provider/model", shown in /api/status.
	Model string
	// Adapters reports the platform adapters' state; may be nil.
	Adapters func() []AdapterStatus
	// MCP reports the MCP servers' state (mcp.Manager.Status); may be nil.
	MCP func() []MCPStatus
	// Config, when set, reports ship.json's reload state in /api/status
	// ("config") and on the console's Overview; the status's "model" is
	// then the default model in force. Its LastError is shown as it is:
	// the reloader has taken the secrets out (cmd/ship/reload.go).
	Config func() ConfigStatus
	// Cluster, when set, reports the cluster in /api/status (cluster mode).
	Cluster func(ctx context.Context) any
	// Webhooks are platform webhook handlers by route pattern ("POST
	// /webhook/telegram"). They sit outside /api: platforms cannot send the
	// API token, so each handler checks its platform's own signature or
	// secret.
	Webhooks map[string]http.Handler
	// Tasks serves /api/tasks (the scheduler); nil lists none.
	Tasks TaskService
	// Notes are the long-term notes the console shows and edits; nil: off.
	Notes console.NotesService
	// CORSOrigins may call the API from a browser ("*" for any); none by
	// default.
	CORSOrigins []string
	// SSEKeepAlive is the comment interval on event streams; 0 → 30 s.
	SSEKeepAlive time.Duration
	// SSEBuffer is how many events a slow subscriber may fall behind
	// before it is cut off; 0 → 256.
	SSEBuffer int
	// SSEMaxPerClient caps the event streams (GET /api/sse, the console's
	// live updates, streamed /api/execute) one client address may hold
	// open; 0 → 16. Past it, or past SSEMaxTotal, a stream is refused
	// with 503.
	SSEMaxPerClient int
	// SSEMaxTotal caps the event streams open at once; 0 → 256.
	SSEMaxTotal int
	// MaxBodyBytes caps a request body; 0 → 1 MiB.
	MaxBodyBytes int64
	// MaxInstructionChars caps instructions in Unicode code points;
	// 0 → 10,000.
	MaxInstructionChars int
	// Console serves the web console at / (see package console).
	Console bool
	// ConsoleRole is the tool-policy role the console's user acts as when
	// answering approvals; "" lets it show them only.
	ConsoleRole string
	// Files is where received and sent files are kept: the console shows
	// received images from it, GET /api/files/… downloads from it (in a
	// cluster, fetching one another replica kept). Nil serves none.
	Files *media.Store
	// Redact removes known secrets from error text the console shows.
	Redact func(string) string
	// Metrics, when set, is served at GET /metrics behind the API token
	// (metrics.go); nil serves none.
	Metrics http.Handler
	// Now is the clock of the wrong-token throttle; nil → time.Now.
	Now    func() time.Time
	Logger zerolog.Logger
}

// Server serves the HTTP API. Create it with New.
type Server struct {
	opts    Options
	log     zerolog.Logger
	auth    *authenticator // nil when no token is configured
	handler http.Handler
	// throttle holds back addresses that present wrong tokens, to the API
	// and at the console's login alike.
	throttle *throttle.Limiter

	// closing is closed by CloseStreams: event streams end so a graceful
	// shutdown does not wait on them.
	closing   chan struct{}
	closeOnce sync.Once
	// streams caps the open event streams.
	streams *streamSlots

	// mu guards inflight: the reply collectors of the api runs whose
	// request is still being answered.
	mu       sync.Mutex
	inflight map[runKey]*collector

	console *console.Console // nil when Options.Console is off

	// drain is set by Drain (drain.go): new work is refused.
	drain *drainState
}

// New builds the server and registers its dispatcher for the api channel
// (chat.ChannelAPI) through the door, so chat_send and the
// final-output fallback of api runs reach the waiting HTTP request.
func New(opts Options) (*Server, error) {
	if opts.Door == nil || opts.View == nil {
		return nil, errors.New("server: Options.Door and Options.View are required (the engine: see engine.New)")
	}
	if opts.MaxBodyBytes < 0 || opts.MaxInstructionChars < 0 {
		return nil, errors.New("server: MaxBodyBytes and MaxInstructionChars must not be negative")
	}
	if opts.MaxBodyBytes == 0 {
		opts.MaxBodyBytes = defaultMaxBodyBytes
	}
	if opts.MaxInstructionChars == 0 {
		opts.MaxInstructionChars = defaultMaxInstructionChars
	}
	if opts.SSEKeepAlive <= 0 {
		opts.SSEKeepAlive = defaultKeepAlive
	}
	if opts.SSEBuffer <= 0 {
		opts.SSEBuffer = defaultSSEBuffer
	}
	if opts.SSEMaxPerClient <= 0 {
		opts.SSEMaxPerClient = defaultSSEMaxPerClient
	}
	if opts.SSEMaxTotal <= 0 {
		opts.SSEMaxTotal = defaultSSEMaxTotal
	}
	if opts.Started.IsZero() {
		opts.Started = time.Now()
	}
	s := &Server{
		opts:     opts,
		log:      opts.Logger.With().Str("component", "http").Logger(),
		inflight: make(map[runKey]*collector),
		closing:  make(chan struct{}),
		streams:  newStreamSlots(opts.SSEMaxPerClient, opts.SSEMaxTotal),
		throttle: throttle.New(throttle.Options{Now: opts.Now}),
		drain:    newDrainState(opts.Webhooks),
	}
	if err := s.setupAuth(); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}

	mux := http.NewServeMux()
	for _, rt := range apiRoutes() {
		mux.HandleFunc(rt.Method+" "+rt.Pattern, func(w http.ResponseWriter, r *http.Request) { rt.handle(s, w, r) })
	}
	if opts.Console {
		c, err := console.New(console.Options{
			Door: opts.Door, View: opts.View, Token: opts.Token, Version: opts.Version, Started: opts.Started,
			Adapters: opts.Adapters, MCP: opts.MCP, Config: opts.Config, Tasks: opts.Tasks, Notes: opts.Notes, Events: s.serveEvents,
			Role: opts.ConsoleRole, Files: opts.Files, Redact: opts.Redact,
			MaxMessageChars: opts.MaxInstructionChars, Throttle: s.throttle, Logger: opts.Logger,
		})
		if err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
		c.Register(mux)
		s.console = c
	}
	for pattern, h := range opts.Webhooks {
		if strings.HasPrefix(strings.TrimPrefix(pattern, "POST "), "/api/") {
			return nil, fmt.Errorf("server: webhook route %q must not be under /api/", pattern)
		}
		mux.Handle(pattern, http.MaxBytesHandler(h, opts.MaxBodyBytes))
	}

	// Outermost first: every request gets an id and a log line, then panics
	// are caught (so they are logged with that id), then auth, then routing.
	// CORS sits outside auth so a browser's preflight (which carries no
	// token) is answered. The browser guard sits between the two (see
	// withBrowserGuard for why there).
	s.handler = s.withRequestLog(s.withRecover(s.withCORS(s.withBrowserGuard(s.withAuth(s.withDrain(withFilePaths(withJSONFallbacks(mux))))))))

	opts.Door.Register(chat.ChannelAPI, apiChannel{s: s})
	return s, nil
}

// CloseStreams ends every open event stream; register it with
// http.Server.RegisterOnShutdown so Shutdown need not wait for them.
func (s *Server) CloseStreams() {
	s.closeOnce.Do(func() {
		close(s.closing)
		if s.console != nil {
			s.console.Close()
		}
	})
}

// Handler returns the HTTP handler of the API.
func (s *Server) Handler() http.Handler { return s.handler }

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, r, http.StatusOK, map[string]string{"status": "ok"})
}

type statusResponse struct {
	Version       string          `json:"version"`
	UptimeSeconds int64           `json:"uptimeSeconds"`
	StartedAt     string          `json:"startedAt"`
	Model         string          `json:"model"`
	Queue         queueStatus     `json:"queue"`
	Adapters      []AdapterStatus `json:"adapters"`
	MCP           []MCPStatus     `json:"mcp"`
	// Cluster is set in cluster mode: the replicas, who holds each
	// platform connection, each replica's running chats.
	Cluster any `json:"cluster,omitempty"`
	// Usage is today's tokens, in all and by the top chats and people.
	Usage *engine.UsageReport `json:"usage,omitempty"`
	// Config is ship.json's reload state, when ship reloads it.
	Config *ConfigStatus `json:"config,omitempty"`
}

type queueStatus struct {
	Capacity        int      `json:"capacity"`
	Concurrency     int      `json:"concurrency"`
	Waiting         int      `json:"waiting"`
	Running         int      `json:"running"`
	RunningChatKeys []string `json:"runningChatKeys"`
}

// configStatus is the model /api/status names and ship.json's reload
// state: with reloads, the default model in force, since a reload may
// have changed it.
func (s *Server) configStatus() (string, *ConfigStatus) {
	if s.opts.Config == nil {
		return s.opts.Model, nil
	}
	cs := s.opts.Config()
	def := s.opts.View.Models().Default().Config
	return def.Provider + "/" + def.Model, &cs
}

func (s *Server) handleStatus(w http.ResponseWriter, r *http.Request) {
	st := s.opts.View.QueueStats()
	keys := st.RunningChatKeys
	if keys == nil {
		keys = []string{}
	}
	var adapterList []AdapterStatus
	if s.opts.Adapters != nil {
		adapterList = s.opts.Adapters()
	}
	if adapterList == nil {
		adapterList = []AdapterStatus{}
	}
	mcpList := []MCPStatus{}
	if s.opts.MCP != nil {
		mcpList = append(mcpList, s.opts.MCP()...)
	}
	var cluster any
	if s.opts.Cluster != nil {
		cluster = s.opts.Cluster(r.Context())
	}
	model, cfg := s.configStatus()
	writeJSON(w, r, http.StatusOK, statusResponse{
		Config:        cfg,
		Cluster:       cluster,
		Version:       s.opts.Version,
		UptimeSeconds: int64(time.Since(s.opts.Started) / time.Second),
		StartedAt:     s.opts.Started.UTC().Format(time.RFC3339),
		Model:         model,
		Queue: queueStatus{
			Capacity:        st.Capacity,
			Concurrency:     st.Concurrency,
			Waiting:         st.Waiting,
			Running:         st.Running,
			RunningChatKeys: keys,
		},
		Adapters: adapterList,
		MCP:      mcpList,
		Usage:    s.usageStatus(r.Context()),
	})
}
