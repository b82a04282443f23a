package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/runtime/agent"
)

// Defaults of a sub-agent's budgets (tools.agents.maxSteps, maxTokens):
// enough for a focused side task, small enough that a runaway one stops
// while it is still cheap.
const (
	DefaultSubAgentSteps  = 12
	DefaultSubAgentTokens = 60_000
)

// Budgets a sub-agent can run out of (dispatch_completed's budget).
const (
	budgetSteps  = "steps"
	budgetTokens = "tokens"
)

// errBudget stops a sub-agent whose budget ran out: the model is not
// called again.
type errBudget struct {
	which string // budgetSteps or budgetTokens
	limit int
}

func (e *errBudget) Error() string {
	if e.which == budgetSteps {
		return fmt.Sprintf("the sub-agent's budget of %d model calls ran out", e.limit)
	}
	return fmt.Sprintf("the sub-agent's budget of %d tokens ran out", e.limit)
}

// budget is what one sub-agent may spend, asked for in agent_spawn and
// bounded by tools.agents.
type budget struct {
	steps, tokens int
}

// budgetOf checks agent_spawn's maxSteps and maxTokens: zero takes the
// configured budget, more than it is cut to it (a caller cannot give more
// than the operator allows), a negative one is an error.
func (o SubAgentOptions) budgetOf(in spawnArgs) (budget, error) {
	if in.MaxSteps < 0 || in.MaxTokens < 0 {
		return budget{}, errors.New("maxSteps and maxTokens must be positive (or left out for the defaults)")
	}
	b := budget{steps: o.MaxSteps, tokens: o.MaxTokens}
	if in.MaxSteps > 0 && in.MaxSteps < b.steps {
		b.steps = in.MaxSteps
	}
	if in.MaxTokens > 0 && in.MaxTokens < b.tokens {
		b.tokens = in.MaxTokens
	}
	return b, nil
}

// budgetModel is the sub-agent's model, counting its calls and tokens:
// once either budget is spent, the next call is refused with errBudget
// and the run ends. Tokens are known only after a call, so the call that
// crosses the token budget completes; none follows it.
type budgetModel struct {
	inner llms.Model
	limit budget

	mu     sync.Mutex
	steps  int
	tokens int
}

// GenerateContent implements llms.Model: the inner model's call, unless a
// budget is spent.
func (m *budgetModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	m.mu.Lock()
	switch {
	case m.steps >= m.limit.steps:
		m.mu.Unlock()
		return nil, &errBudget{which: budgetSteps, limit: m.limit.steps}
	case m.tokens >= m.limit.tokens:
		m.mu.Unlock()
		return nil, &errBudget{which: budgetTokens, limit: m.limit.tokens}
	}
	m.steps++
	m.mu.Unlock()
	resp, err := m.inner.GenerateContent(ctx, msgs, opts...)
	if resp != nil {
		n := 0
		for _, c := range resp.Choices {
			u := agent.UsageOf(c.GenerationInfo)
			n += u.PromptTokens + u.CompletionTokens
		}
		m.mu.Lock()
		m.tokens += n
		m.mu.Unlock()
	}
	return resp, err
}

// Call implements llms.Model through GenerateContent, so it is counted.
func (m *budgetModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

// spent returns the calls and tokens used so far.
func (m *budgetModel) spent() (steps, tokens int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.steps, m.tokens
}

// budgetResult is the job's result of a sub-agent stopped by its budget:
// which budget ran out, and what it had written so far, marked as
// unfinished.
func budgetResult(over *errBudget, partial string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "stopped: %s before it finished.", over.Error())
	if p := strings.TrimSpace(partial); p != "" {
		b.WriteString("\n[partial output, unfinished]\n")
		b.WriteString(p)
		b.WriteString("\n[end of partial output]")
	} else {
		b.WriteString(" It left no output.")
	}
	return b.String()
}
