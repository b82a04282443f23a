package main

import (
	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/runtime/engine"
)

// subAgentOptions turns tools.agents into the engine's sub-agent options:
// nil (no agent_spawn) when switched off. The engine offers agent_spawn only
// with background jobs, and the tool policy must allow it.
func subAgentOptions(cfg config.Config) *engine.SubAgentOptions {
	if cfg.Tools.Agents.Off {
		return nil
	}
	return &engine.SubAgentOptions{MaxDepth: cfg.Tools.Agents.MaxDepth, MaxPerRun: cfg.Tools.Agents.MaxPerRun}
}
