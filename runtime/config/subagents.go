package config

import "fmt"

// SubAgentsConfig is tools.agents: the sub-agents agent_spawn starts. They
// run as background jobs, so they are on whenever jobs are; the tool
// policy must still allow agent_spawn. These bound them.
type SubAgentsConfig struct {
	// MaxDepth bounds nesting: a person's run starts depth 1, which may
	// start depth 2 (default 2).
	MaxDepth int `json:"maxDepth,omitempty"`
	// MaxPerRun bounds the sub-agents one run may start (default 3).
	MaxPerRun int `json:"maxPerRun,omitempty"`
	// MaxSteps is each sub-agent's budget of model calls: its default
	// and the most agent_spawn may ask for (default 12).
	MaxSteps int `json:"maxSteps,omitempty"`
	// MaxTokens is each sub-agent's budget of tokens (input and output
	// of all its model calls): its default and the most agent_spawn may
	// ask for (default 60,000).
	MaxTokens int `json:"maxTokens,omitempty"`
	// Off switches agent_spawn off.
	Off bool `json:"off,omitempty"`
}

// maxSubAgents bounds both numbers: a mistyped one must not let agents
// fan out without end.
const maxSubAgents = 10

// Upper bounds of a sub-agent's budgets: a mistyped one must not let one
// run spend without end. Every run stops after 30 model calls anyway (the
// agent runtime's step limit), so a larger step budget would promise what
// no run gets.
const (
	maxSubAgentSteps  = 30
	maxSubAgentTokens = 10_000_000
)

func (s SubAgentsConfig) validate() error {
	if s.MaxDepth < 0 || s.MaxDepth > maxSubAgents || s.MaxPerRun < 0 || s.MaxPerRun > maxSubAgents {
		return fmt.Errorf("%w: tools.agents.maxDepth and tools.agents.maxPerRun must be between 1 and %d", ErrInvalid, maxSubAgents)
	}
	if s.MaxSteps < 0 || s.MaxSteps > maxSubAgentSteps {
		return fmt.Errorf("%w: tools.agents.maxSteps must be between 1 and %d (model calls per sub-agent)", ErrInvalid, maxSubAgentSteps)
	}
	if s.MaxTokens < 0 || s.MaxTokens > maxSubAgentTokens {
		return fmt.Errorf("%w: tools.agents.maxTokens must be between 1 and %d (tokens per sub-agent)", ErrInvalid, maxSubAgentTokens)
	}
	return nil
}
