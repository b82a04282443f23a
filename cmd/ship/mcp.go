package main

import (
	"context"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/runtime/jobs"
	"github.com/shipmyagent/ship/runtime/mcp"
	"github.com/shipmyagent/ship/tools/mcptools"
)

// mcpServers is the MCP side of ship as ship.json's "mcp" section sets it
// up: the servers' sessions and the toolbox that offers their tools. With
// no servers configured every method does nothing.
type mcpServers struct {
	manager *mcp.Manager // nil without servers
	toolbox *mcptools.Toolbox
}

// newMCP builds the MCP side; nothing connects before start. The calls a
// server's "background" list names run as jobs of m (nil: jobs are off,
// and they run in the turn), their labels redacted by redact.
func newMCP(cfg config.Config, m *jobs.Manager, redact func(string) string, log zerolog.Logger) *mcpServers {
	if len(cfg.MCP.Servers) == 0 {
		return &mcpServers{}
	}
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
	return &mcpServers{manager: mgr, toolbox: mcptools.NewWith(mgr, log, mcptools.Options{
		Jobs: m, Background: cfg.MCP.RunsInBackground, Redact: redact,
	})}
}

// toolboxes is what engine.Options.Toolboxes takes.
func (s *mcpServers) toolboxes() []agent.Toolbox {
	if s.manager == nil {
		return nil
	}
	return []agent.Toolbox{s.toolbox}
}

// status is what server.Options.MCP takes.
func (s *mcpServers) status() []mcp.ServerStatus {
	if s.manager == nil {
		return nil
	}
	return s.manager.Status()
}

// start connects in the background: start-up never waits for a server.
func (s *mcpServers) start(ctx context.Context, log zerolog.Logger) {
	if s.manager == nil {
		return
	}
	s.manager.Start(ctx)
	for _, st := range s.manager.Status() {
		log.Info().Str("server", st.Name).Str("transport", st.Transport).Msg("mcp server connecting")
	}
}

// close ends every session; stdio servers are asked to exit, then
// terminated.
func (s *mcpServers) close() {
	if s.manager != nil {
		s.manager.Close()
	}
}
