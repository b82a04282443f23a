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
	a := cfg.Tools.Agents
	return &engine.SubAgentOptions{MaxDepth: a.MaxDepth, MaxPerRun: a.MaxPerRun, MaxSteps: a.MaxSteps, MaxTokens: a.MaxTokens}
}
