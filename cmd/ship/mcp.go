package main

import (
	"context"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/runtime/jobs"
	"github.com/shipmyagent/ship/runtime/mcp"
	"github.com/shipmyagent/ship/tools/mcptools"
)

// mcpServers is the MCP side of ship as ship.json's "mcp" section sets it
// up: the servers' sessions and the toolbox that offers their tools. It
// exists without servers too (it then offers nothing and starts nothing):
// a reload may add some.
type mcpServers struct {
	manager *mcp.Manager
	toolbox *mcptools.Toolbox
	// cfg is the "mcp" section in force: a reload replaces it, and with
	// it which calls run in the background.
	cfg atomic.Pointer[config.MCPConfig]
}

// newMCP builds the MCP side; nothing connects before start. The calls a
// server's "background" list names run as jobs of m (nil: jobs are off,
// and they run in the turn), their labels redacted by redact.
func newMCP(cfg config.Config, m *jobs.Manager, redact func(string) string, log zerolog.Logger) *mcpServers {
	log = log.With().Str("component", "mcp").Logger()
	if m == nil && cfg.MCP.HasBackground() {
		log.Warn().Msg("mcp: background jobs are off (tools.jobs.off), so the calls a server's \"background\" names run in the turn")
	}
	mgr := mcp.New(mcp.Options{
		Servers: cfg.MCP.Servers, Dir: cfg.Dir,
		// A stdio server is a child of ship like exec_shell's commands: it
		// never sees ship's own secrets unless its env names them.
		DropEnv: config.SecretEnv, Secrets: cfg.Secrets(),
		Logger: log,
	})
	s := &mcpServers{manager: mgr}
	s.cfg.Store(&cfg.MCP)
	s.toolbox = mcptools.NewWith(mgr, log, mcptools.Options{
		Jobs: m, Background: func(server, tool string) bool { return s.cfg.Load().RunsInBackground(server, tool) }, Redact: redact,
	})
	return s
}

// toolboxes is what engine.Options.Toolboxes takes.
func (s *mcpServers) toolboxes() []agent.Toolbox { return []agent.Toolbox{s.toolbox} }

// status is what server.Options.MCP takes.
func (s *mcpServers) status() []mcp.ServerStatus { return s.manager.Status() }

// update makes cfg's servers the set (a configuration reload).
func (s *mcpServers) update(cfg config.Config, log zerolog.Logger) {
	s.cfg.Store(&cfg.MCP)
	added, removed, restarted := s.manager.Update(cfg.MCP.Servers)
	log.Info().Strs("added", added).Strs("removed", removed).Strs("restarted", restarted).
		Msg("mcp servers reloaded: removed ones stop once their running calls end")
}

// start connects in the background: start-up never waits for a server.
func (s *mcpServers) start(ctx context.Context, log zerolog.Logger) {
	s.manager.Start(ctx)
	for _, st := range s.manager.Status() {
		log.Info().Str("server", st.Name).Str("transport", st.Transport).Msg("mcp server connecting")
	}
}

// close ends every session; stdio servers are asked to exit, then
// terminated.
func (s *mcpServers) close() { s.manager.Close() }
