package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/jobs"
	"github.com/shipmyagent/ship/runtime/llm"
	"github.com/shipmyagent/ship/runtime/turn"
)

// SubAgentTool is the name of the tool that starts a sub-agent.
const SubAgentTool = "agent_spawn"

// Defaults of SubAgentOptions (seed 001's loop protection).
const (
	DefaultSubAgentDepth  = 2
	DefaultSubAgentPerRun = 3
)

// SubAgentOptions switch sub-agents on (tools.agents); they need
// background jobs, whose limits apply to them too.
type SubAgentOptions struct {
	// MaxDepth bounds nesting: a run the person started is depth 0, the
	// sub-agent it starts depth 1 (default 2).
	MaxDepth int
	// MaxPerRun bounds how many sub-agents one run may start (default 3).
	MaxPerRun int
	// MaxSteps and MaxTokens are each sub-agent's budgets of model calls
	// and of tokens (input and output): the default and the most
	// agent_spawn may ask for (defaults 12 and 60,000).
	MaxSteps, MaxTokens int
}

// subScope is what the governor knows of a run about sub-agents: its
// depth, the job it runs as (a sub-agent's), the tools it was given and how
// many sub-agents it started.
type subScope struct {
	depth   int
	jobID   string
	only    []string // nil: no list beyond the policy
	parent  *subScope
	spawned atomic.Int32
	// brief is the sub-agent's brief, whitespace collapsed: a descendant
	// with the same brief is a loop (seed 001's execution_chain).
	brief string
	// requestID is the person's turn that started the chain.
	requestID string
}

// offers says whether a sub-agent run may use tool at all: never to talk
// in the chat itself (its output returns as a turn), only chat history to
// read, and only the tools it was given.
func (s *subScope) offers(tool string) bool {
	if s == nil || s.depth == 0 {
		return true
	}
	if !s.parent.offers(tool) {
		return false
	}
	if strings.HasPrefix(tool, "chat_") && tool != "chat_load_history" {
		return false
	}
	if s.only == nil {
		return true
	}
	for _, p := range s.only {
		if p == tool || (strings.HasSuffix(p, "*") && strings.HasPrefix(tool, strings.TrimSuffix(p, "*"))) {
			return true
		}
	}
	return false
}

// spawnArgs are agent_spawn's arguments.
type spawnArgs struct {
	Brief          string   `json:"brief"`
	Tools          []string `json:"tools"`
	Model          string   `json:"model"`
	TimeoutSeconds float64  `json:"timeoutSeconds"`
	MaxSteps       int      `json:"maxSteps"`
	MaxTokens      int      `json:"maxTokens"`
}

// spawnTool is agent_spawn: the engine's own tool, since a sub-agent is a
// run of the engine.
type spawnTool struct {
	e atomic.Pointer[Engine]
}

// Definition implements agent.Tool.
func (t *spawnTool) Definition() llms.FunctionDefinition {
	return llms.FunctionDefinition{
		Name: SubAgentTool,
		Description: "Start a sub-agent: a run of its own, in the background, that works on brief and whose final answer comes back to this chat " +
			"as a later message. It acts with your rights or fewer (tools narrows them). It cannot talk in the chat or ask for approvals. " +
			"Do not wait or poll for it; /jobs lists it and /cancel ID stops it.",
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"brief":          map[string]any{"type": "string", "description": "what the sub-agent should do, self-contained"},
				"tools":          map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "tool names (or prefix* patterns) it may use; default: yours"},
				"model":          map[string]any{"type": "string", "description": "a configured model's name; default: this chat's"},
				"timeoutSeconds": map[string]any{"type": "number", "description": "how long it may run (its lease); default and maximum: the jobs' maximum"},
				"maxSteps":       map[string]any{"type": "integer", "description": "most model calls it may make; default and maximum: tools.agents.maxSteps"},
				"maxTokens":      map[string]any{"type": "integer", "description": "most tokens (input + output) it may use; default and maximum: tools.agents.maxTokens"},
			},
			"required": []string{"brief"},
		},
	}
}

// Call implements agent.Tool.
func (t *spawnTool) Call(ctx context.Context, raw json.RawMessage) agent.ToolResult {
	fail := func(msg string) agent.ToolResult {
		b, _ := json.Marshal(map[string]any{"success": false, "error": msg}) // a string map always encodes
		return agent.ToolResult{OK: false, Content: string(b)}
	}
	var in spawnArgs
	if err := json.Unmarshal(raw, &in); err != nil {
		return fail("bad arguments: " + err.Error())
	}
	if strings.TrimSpace(in.Brief) == "" {
		return fail("brief is required")
	}
	e := t.e.Load()
	if e == nil {
		return fail("sub-agents are not ready")
	}
	j, err := e.spawn(ctx, in)
	if err != nil {
		return fail(err.Error())
	}
	b, _ := json.Marshal(map[string]any{"success": true, "job": j.ID, "status": "started",
		"note": fmt.Sprintf("The sub-agent runs in the background as job %s; its answer arrives in a later message. Do not wait or poll.", j.ID)})
	return agent.ToolResult{OK: true, Content: string(b)}
}

// spawn starts a sub-agent for the run in ctx.
func (e *Engine) spawn(ctx context.Context, in spawnArgs) (jobs.Job, error) {
	if e.jobs == nil || e.sub == nil {
		return jobs.Job{}, errors.New("sub-agents are not enabled here (they need background jobs)")
	}
	sc := e.gov.scope(ctx)
	parent := sc.sub
	depth := 1
	if parent != nil {
		depth = parent.depth + 1
	}
	lim, err := e.sub.opts.budgetOf(in)
	if err != nil {
		return jobs.Job{}, err
	}
	brief := strings.Join(strings.Fields(in.Brief), " ")
	if a := parent.sameBrief(brief); a != nil {
		return jobs.Job{}, fmt.Errorf("refused: this brief is the same as that of sub-agent %s, which this one descends from: a loop (seed 001's execution_chain); do the work yourself or report back", a.jobID)
	}
	if depth > e.sub.opts.MaxDepth {
		return jobs.Job{}, fmt.Errorf("refused: a sub-agent here would be nested %d deep, and at most %d is allowed (tools.agents.maxDepth); do the work yourself", depth, e.sub.opts.MaxDepth)
	}
	if parent != nil && int(parent.spawned.Add(1)) > e.sub.opts.MaxPerRun {
		return jobs.Job{}, fmt.Errorf("refused: this run already started %d sub-agents, the most one run may (tools.agents.maxPerRun)", e.sub.opts.MaxPerRun)
	}
	if in.Model != "" {
		if _, ok := e.picker.catalog().Get(in.Model); !ok {
			return jobs.Job{}, fmt.Errorf("no model %q in llm.models (have %s)", in.Model, strings.Join(e.picker.catalog().Names(), ", "))
		}
	}
	run, _ := dispatch.RunFrom(ctx)
	route := sc.req
	timeout := time.Duration(in.TimeoutSeconds * float64(time.Second))
	label := fmt.Sprintf("%s %q", SubAgentTool, clip(brief, 80))
	reqID := chainRequest(parent, run)
	// Start names the job only once it runs; the sub-agent waits for its
	// name and lease, which the audit and the events need.
	ready := make(chan jobs.Job, 1)
	j, err := e.jobs.Start(jobs.Spec{ChatKey: route.ChatKey, Route: route, Identity: run.Identity, Tool: SubAgentTool, Label: label}, timeout,
		func(jctx context.Context) jobs.Result {
			var j jobs.Job
			select {
			case j = <-ready:
			case <-jctx.Done():
				return jobs.Result{ExitCode: -1, Content: "stopped before it began"}
			}
			// The caller's own list (a sub-agent's) still applies: parent.
			sub := &subScope{depth: depth, jobID: j.ID, only: in.Tools, parent: parent, brief: brief, requestID: reqID}
			return e.runSubAgent(jctx, subRun{sub: sub, job: j, parent: sc, identity: run.Identity, in: in, budget: lim})
		})
	if err != nil {
		return j, fmt.Errorf("starting the sub-agent: %w", err)
	}
	ready <- j
	return j, nil
}

// runSubAgent runs the sub-agent: the parent's identity and policy
// narrowed further, the brief as its message, its own history, its tool
// calls in the parent chat's log naming it, and no reply of its own: its
// final output is the job's result.
func (e *Engine) runSubAgent(ctx context.Context, r subRun) jobs.Result {
	sub, parent, identity, in := r.sub, r.parent, r.identity, r.in
	route := parent.req
	run := dispatch.Run{Request: route, Refusals: &dispatch.Refusals{}}
	e.gov.begin(&run, ingress.Job{Turn: turn.Turn{Identity: identity, Route: route}})
	scope := run.Scope.(runScope)
	// The caller's request layer (an API run's narrowing) and what its
	// own tools tightened (a skill's allowed-tools) bind it too; a skill
	// the sub-agent loads may only tighten those further.
	scope.narrowing, scope.sub = parent.narrowing, sub
	if parent.limits != nil {
		scope.limits, run.Limits = parent.limits, parent.limits
	}
	run.Scope = scope
	ctx = dispatch.WithRun(ctx, run)
	log := e.log.With().Str("chatKey", route.ChatKey).Str("subAgent", sub.jobID).Logger()
	ctx = log.WithContext(ctx)
	audit := newAudit(e.store, e.sub.redact, route)
	audit.meta = map[string]any{"subAgent": sub.jobID}
	// Its own history: the parent chat's is not its to read or extend.
	key := route.ChatKey + "#sub-" + sub.jobID
	defer e.runtime.Forget(key)
	var partial string // its latest text, what a stopped run leaves
	ain := agent.AgentRunInput{ChatKey: key, Route: route, Instructions: in.Brief,
		OnStep: func(ctx context.Context, step agent.StepEvent) {
			if step.Type == agent.StepText {
				partial = step.Text
			}
			audit.step(ctx, step)
		},
		OnSession: func(_ context.Context, s agent.SessionBuilt) {
			e.publishSub(r, sessionEvent(s, subAgentName, sub.jobID))
		},
	}
	m, call := e.picker.forRun(ctx, route.ChatKey, llm.Override{Model: in.Model}, log)
	bm := &budgetModel{inner: m.LLM, limit: r.budget}
	ain.Model, ain.Call = bm, call
	started := time.Now()
	e.publishSub(r, r.dispatchStarted(m.Name))
	res, err := e.runtime.Run(ctx, ain)
	e.countSubAgent(ctx, route.ChatKey, turn.Turn{Identity: identity, Route: route}, res.Usage)
	var over *errBudget
	errors.As(err, &over)
	e.publishSub(r, r.dispatchCompleted(ctx, m.Name, res, err, over, time.Since(started)))
	switch {
	case over != nil:
		steps, tokens := bm.spent()
		log.Warn().Str("budget", over.which).Int("steps", steps).Int("tokens", tokens).Msg("sub-agent stopped by its budget")
		return jobs.Result{ExitCode: 1, Content: e.sub.redact(budgetResult(over, partial))}
	case err != nil:
		log.Warn().Err(err).Msg("sub-agent run failed")
		return jobs.Result{ExitCode: 1, Content: e.sub.redact(fmt.Sprintf("the sub-agent failed: %v", err))}
	}
	code := 0
	if !res.Success {
		code = 1
	}
	return jobs.Result{OK: res.Success, ExitCode: code, Content: e.sub.redact(res.Output)}
}

// countSubAgent adds a sub-agent's tokens to its chat's and its person's
// day: a sub-agent spends the budget of whoever started it.
func (e *Engine) countSubAgent(ctx context.Context, chatKey string, t turn.Turn, u turn.Usage) {
	if e.usage == nil {
		return
	}
	if err := e.usage.Add(context.WithoutCancel(ctx), chatKey, person(t), countsOf(u)); err != nil {
		zerolog.Ctx(ctx).Error().Err(err).Msg("counting a sub-agent's tokens")
	}
}

// subAgentText is the new turn that brings a finished sub-agent's answer
// to its parent chat.
func subAgentText(j jobs.Job, outcome, output string) string {
	return fmt.Sprintf("[sub-agent %s (%s) %s: %s]\nThis is the answer of a sub-agent started earlier in this chat; use it and tell the person what it means.",
		j.ID, j.Label, outcome, clip(output, jobResultLimit))
}

// subAgents is the engine's part of sub-agents; nil when they are off.
type subAgents struct {
	opts   SubAgentOptions
	redact func(string) string
	tool   *spawnTool
}

// newSubAgents returns the sub-agents' state and tool, or nil when o is
// nil or jobs are off.
func newSubAgents(o *SubAgentOptions, jobsOn bool, redact func(string) string) *subAgents {
	if o == nil || !jobsOn {
		return nil
	}
	opts := *o
	if opts.MaxDepth <= 0 {
		opts.MaxDepth = DefaultSubAgentDepth
	}
	if opts.MaxPerRun <= 0 {
		opts.MaxPerRun = DefaultSubAgentPerRun
	}
	if opts.MaxSteps <= 0 {
		opts.MaxSteps = DefaultSubAgentSteps
	}
	if opts.MaxTokens <= 0 {
		opts.MaxTokens = DefaultSubAgentTokens
	}
	if redact == nil {
		redact = func(s string) string { return s }
	}
	return &subAgents{opts: opts, redact: redact, tool: &spawnTool{}}
}
