package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/llm"
	"github.com/shipmyagent/ship/runtime/media"
)

// Options configure a Runtime. Model is required; the rest has defaults.
type Options struct {
	Model llms.Model
	Tools []Tool
	// Store is the ChatStore that history is rebuilt from after a restart.
	Store chat.Log
	// AgentMDPath is the operator's standing instructions; a missing file
	// means none.
	AgentMDPath string
	History     HistoryLimits
	MaxSteps    int // model calls per run; 0 → 30
	MaxInjected int // history messages a run may inject; 0 → 120
	// MaxTokens caps each model answer (max_tokens); 0 → llm.DefaultMaxTokens.
	MaxTokens int
	// Stream asks the model to stream its text, which is passed to OnStep
	// as text_delta events, and its tool calls' input, passed as
	// tool_call_delta events.
	Stream bool
	// ModelRetries is how often a transient model error (429, 5xx, network)
	// is retried; RetryBackoff is the first wait, doubled each time, with
	// jitter. 0 → 2 retries, 1 s.
	ModelRetries int
	RetryBackoff time.Duration
	Now          func() time.Time
	// Gate, when set, decides which tools each run offers and whether each
	// call may run.
	Gate Gate
	// Toolboxes offer tools that come and go while ship runs (MCP
	// servers); each run takes their tools as they are when it starts. A
	// name already taken is skipped.
	Toolboxes []Toolbox
	// PromptSections add text to every run's system prompt, after the
	// default prompt (the list of skills); each is called once per run and
	// "" adds nothing.
	PromptSections []func() string
	// SummaryModel writes the summaries of a chat's oldest turns when its
	// history passes the limits (a cheaper model may do); nil: the run's
	// own model.
	SummaryModel llms.Model
	// Notes, when set, adds the long-term notes of the chat (and of the
	// person speaking, where allowed) to the system prompt, after the
	// sections; "" adds nothing. It is called once per run.
	Notes func(ctx context.Context, chatKey string, route dispatch.RequestContext) string
	// Vision shows the images of the message being answered to the model
	// as image parts, read through Files: in a cluster the message may
	// have been received by another replica, and the store fetches what
	// is not on this one's disk. Nil Files: images are only described.
	Vision bool
	Files  *media.Store
	Logger zerolog.Logger
}

// Toolbox is a source of tools that change at run time.
type Toolbox interface {
	Tools() []Tool
}

// Runtime is the agent brain. One Runtime serves every chat; runs of
// different chats may overlap, runs of one chat must not (the queue ensures
// that).
type Runtime struct {
	opts     Options
	tools    map[string]Tool
	toolDefs []llms.Tool
	md       *agentMD
	sessions *sessions
}

// ErrNoModel is returned by New without a model.
var ErrNoModel = errors.New("no model configured")

// New returns a Runtime.
func New(opts Options) (*Runtime, error) {
	if opts.Model == nil {
		return nil, ErrNoModel
	}
	if opts.MaxSteps <= 0 {
		opts.MaxSteps = 30
	}
	if opts.MaxInjected <= 0 {
		opts.MaxInjected = DefaultMaxInjected
	}
	if opts.MaxTokens <= 0 {
		opts.MaxTokens = llm.DefaultMaxTokens
	}
	if opts.ModelRetries == 0 {
		opts.ModelRetries = 2
	}
	if opts.RetryBackoff <= 0 {
		opts.RetryBackoff = time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	r := &Runtime{
		opts:     opts,
		tools:    make(map[string]Tool),
		md:       &agentMD{path: opts.AgentMDPath},
		sessions: newSessions(opts.History, opts.Store),
	}
	for _, t := range opts.Tools {
		def := t.Definition()
		if _, dup := r.tools[def.Name]; dup {
			return nil, fmt.Errorf("registering tool %q: duplicate name", def.Name)
		}
		r.tools[def.Name] = t
		r.toolDefs = append(r.toolDefs, modelTool(def))
	}
	return r, nil
}

// Forget empties the in-memory history of a chat (the /clear command). The
// ChatStore keeps the log, so chat_load_history still finds it.
func (r *Runtime) Forget(chatKey string) { r.sessions.forget(chatKey) }

// ChatsInMemory reports how many chats have history in memory.
func (r *Runtime) ChatsInMemory() int { return r.sessions.len() }

// Run handles one user message of a chat. The result is never empty of
// meaning: on failure Success is false and Output is one short line fit to
// show the user; the error says what went wrong for the log.
func (r *Runtime) Run(ctx context.Context, in AgentRunInput) (AgentResult, error) {
	req := in.Route
	hasChannel := req.Channel != ""
	log := r.opts.Logger.With().Str("chatKey", in.ChatKey).Str("channel", req.Channel).Logger()

	agentText := in.Prompt
	if agentText == "" {
		var err error
		if agentText, err = r.md.load(); err != nil {
			log.Warn().Err(err).Msg("Agent.md unreadable; running without it")
		}
	}
	mem, epoch, built, err := r.sessions.history(ctx, in.ChatKey, in.Instructions, req.MessageID)
	hist := mem.turns
	if err != nil {
		log.Warn().Err(err).Msg("history unavailable; running without it")
	}
	if built != nil && in.OnSession != nil {
		in.OnSession(ctx, *built)
	}

	system := systemPrompt(agentText, stablePrompt(in.ChatKey, req, hasChannel))
	for _, section := range r.opts.PromptSections {
		if text := section(); text != "" {
			system += "\n" + text
		}
	}
	if r.opts.Notes != nil {
		if text := r.opts.Notes(ctx, in.ChatKey, req); text != "" {
			system += "\n" + text
		}
	}
	if mem.summary != "" {
		system += "\n" + summaryTitle + mem.summary + "\n"
	}
	messages := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, system)}
	for _, t := range hist {
		messages = append(messages, t...)
	}
	messages = append(messages, llms.TextParts(llms.ChatMessageTypeHuman, runtimeNote(r.opts.Now(), req)))
	user := llms.TextParts(llms.ChatMessageTypeHuman, in.Instructions)
	vision := r.opts.Vision
	if in.Vision != nil {
		vision = *in.Vision
	}
	r.fetchFiles(ctx, in.Files, log)
	messages = append(messages, r.withImages(ctx, user, in.Files, vision, log))
	ec := newToolExecutionContext(messages, len(messages)-1, r.opts.MaxInjected)
	ctx = withToolExecutionContext(ctx, ec)

	l := &loop{r: r, in: in, ec: ec, hist: hist, hasChannel: hasChannel, log: log}
	res, runErr := l.run(ctx)

	newTurn := compactTurn(append(exchange{user}, ec.produced()...), r.sessions.limits.MaxToolOutput)
	mem.turns = append(l.hist, newTurn)
	mem, spent := r.settle(ctx, l.model(), in.ChatKey, chatRoute{req.Channel, req.ChatID}, mem)
	r.sessions.update(in.ChatKey, mem, epoch)
	// A summary is part of what the chat costs.
	res.Usage = res.Usage.Add(spent)
	return res, runErr
}

// loop is the state of one tool loop.
type loop struct {
	r          *Runtime
	in         AgentRunInput
	ec         *ToolExecutionContext
	hist       []exchange
	hasChannel bool
	log        zerolog.Logger

	tools          []llms.Tool     // offered in this run
	callable       map[string]Tool // the run's tools by name, offered or not
	names          toolNames       // function name ↔ policy name
	res            AgentResult
	lastDelivered  string
	contextRetries int
}

const maxContextRetries = 3

func (l *loop) run(ctx context.Context) (AgentResult, error) {
	l.res.ToolCalls = []ToolCallRecord{}
	defs, callable := l.r.runTools(l.log)
	l.callable = callable
	l.names = newToolNames(callable)
	l.tools = l.r.offeredTools(ctx, defs, l.names)
	if len(l.in.Preset) > 0 && l.runPreset(ctx) && l.hasChannel {
		return l.finish(), nil
	}
	for step := 1; step <= l.r.opts.MaxSteps; step++ {
		choice, err := l.generate(ctx, step)
		if err != nil {
			return l.fail(err)
		}
		if choice.Content != "" {
			l.res.Output = choice.Content
			l.emit(ctx, StepEvent{Type: StepText, Step: step, Text: choice.Content})
		}
		if len(choice.ToolCalls) == 0 {
			if choice.Content != "" {
				l.ec.append(llms.TextParts(llms.ChatMessageTypeAI, choice.Content))
			}
			return l.finish(), nil
		}
		if l.runTools(ctx, step, choice) && l.hasChannel {
			// The user has the answer: another model call would only cost
			// time and tokens, or worse, send a second reply.
			return l.finish(), nil
		}
	}
	l.log.Warn().Int("maxSteps", l.r.opts.MaxSteps).Msg("tool loop hit its step limit")
	res := l.finish()
	res.Success = l.res.Delivered
	return res, nil
}

func (l *loop) finish() AgentResult {
	l.res.Success = true
	if l.res.Output == "" && l.res.Delivered {
		l.res.Output = l.lastDelivered
	}
	return l.res
}

// userFacingError is the one line a user sees when the model cannot answer.
const userFacingError = "Sorry, I could not get an answer from the model just now. Please try again in a moment."

func (l *loop) fail(err error) (AgentResult, error) {
	l.res.Success = false
	if errors.Is(err, context.DeadlineExceeded) {
		l.res.Output = "Sorry, that took too long and was stopped. Please try again."
	} else {
		l.res.Output = userFacingError
	}
	return l.res, fmt.Errorf("running model: %w", err)
}

// generate calls the model once, retrying transient errors with backoff and
// shrinking the history on a context-length error. It returns the answer's
// choices merged into one (see mergeChoices).
func (l *loop) generate(ctx context.Context, step int) (*llms.ContentChoice, error) {
	opts := append([]llms.CallOption{llms.WithTools(l.tools)}, llm.CallOptionsOf(l.in.Call, l.r.opts.MaxTokens)...)
	streaming := l.r.opts.Stream && l.in.OnStep != nil && (l.in.Watched == nil || *l.in.Watched)
	var calls toolCallStream
	if streaming {
		opts = append(opts, llms.WithStreamingFunc(func(ctx context.Context, chunk []byte) error {
			switch {
			case len(chunk) == 0:
			case isToolCallDelta(chunk):
				for _, d := range calls.feed(chunk) {
					l.emit(ctx, StepEvent{Type: StepToolCallDelta, Step: step, CallIndex: d.index, Tool: l.names.policy(d.name), Text: d.args})
				}
			default:
				l.emit(ctx, StepEvent{Type: StepTextDelta, Step: step, Text: string(chunk)})
			}
			return nil
		}), llm.WithToolInputStream(func(ctx context.Context, call int, name, piece string) {
			// Claude's tool input: langchaingo's Anthropic client does not
			// pass it to the streaming func (see llm.WithToolInputStream).
			l.emit(ctx, StepEvent{Type: StepToolCallDelta, Step: step, CallIndex: call, Tool: l.names.policy(name), Text: piece})
		}))
	}
	transient := 0
	for attempt := 0; ; attempt++ {
		if attempt > 0 && streaming {
			// The failed attempt's stream is void: shown text and call count start over.
			calls = toolCallStream{}
			l.emit(ctx, StepEvent{Type: StepAttemptRestarted, Step: step})
		}
		resp, err := l.model().GenerateContent(ctx, l.ec.snapshot(), opts...)
		if err == nil {
			if len(resp.Choices) == 0 {
				return nil, errors.New("model returned no choices")
			}
			choice := mergeChoices(resp)
			l.countUsage(choice.GenerationInfo)
			return choice, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		switch {
		case isContextLengthError(err) && l.contextRetries < maxContextRetries && len(l.hist) > 0:
			l.contextRetries++
			l.dropOldestHalf()
			l.log.Warn().Err(err).Int("turnsLeft", len(l.hist)).Msg("context too long; dropped the oldest half of the history")
		case isTransientError(err) && transient < l.r.opts.ModelRetries:
			wait := backoff(l.r.opts.RetryBackoff, transient)
			transient++
			l.log.Warn().Err(err).Dur("wait", wait).Int("attempt", transient).Msg("model call failed; retrying")
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-t.C:
			}
		default:
			return nil, err
		}
	}
}

// model is the model that answers this run.
func (l *loop) model() llms.Model {
	if l.in.Model != nil {
		return l.in.Model
	}
	return l.r.opts.Model
}

// countUsage adds the token counts langchaingo v0.1.14 reports in
// GenerationInfo: PromptTokens/CompletionTokens from OpenAI-style clients,
// with PromptCachedTokens (usage.prompt_tokens_details.cached_tokens) the
// part of the prompt read from the provider's cache; InputTokens/
// OutputTokens from Anthropic, whose input_tokens leave out the tokens
// written to (CacheCreationInputTokens) and read from
// (CacheReadInputTokens) its prompt cache: the prompt is all three.
func (l *loop) countUsage(info map[string]any) { l.res.Usage = l.res.Usage.Add(UsageOf(info)) }

// UsageOf reads the token counts one model call reported in its
// GenerationInfo (see countUsage), as a run counts them (a budget kept
// outside the run counts the same way).
func UsageOf(info map[string]any) Usage {
	n := func(k string) int {
		switch v := info[k].(type) {
		case int:
			return v
		case int64:
			return int(v)
		case float64:
			return int(v)
		}
		return 0
	}
	return Usage{
		PromptTokens:       n("PromptTokens") + n("InputTokens") + n("CacheCreationInputTokens") + n("CacheReadInputTokens"),
		CachedPromptTokens: n("PromptCachedTokens") + n("CacheReadInputTokens"),
		CompletionTokens:   n("CompletionTokens") + n("OutputTokens"),
	}
}

func (l *loop) dropOldestHalf() {
	half := (len(l.hist) + 1) / 2
	n := 0
	for _, t := range l.hist[:half] {
		n += len(t)
	}
	l.ec.dropHistory(1, 1+n)
	l.hist = append([]exchange(nil), l.hist[half:]...)
}

// runTools executes the tool calls of one model answer and reports whether
// one of them delivered text to the user.
func (l *loop) runTools(ctx context.Context, step int, choice *llms.ContentChoice) bool {
	ai := llms.MessageContent{Role: llms.ChatMessageTypeAI}
	if choice.Content != "" {
		ai.Parts = append(ai.Parts, llms.TextContent{Text: choice.Content})
	}
	calls := make([]llms.ToolCall, len(choice.ToolCalls))
	for i, c := range choice.ToolCalls {
		if c.ID == "" {
			c.ID = fmt.Sprintf("call_%d_%d", step, i)
		}
		if c.Type == "" {
			c.Type = "function"
		}
		if c.FunctionCall == nil {
			c.FunctionCall = &llms.FunctionCall{}
		}
		calls[i] = c
	}
	return l.runCalls(ctx, step, ai, calls)
}

// runCalls records one assistant message (ai plus the calls) and runs the
// calls in order, each past the gate, and reports whether one of them
// delivered text to the user.
func (l *loop) runCalls(ctx context.Context, step int, ai llms.MessageContent, calls []llms.ToolCall) bool {
	for _, c := range calls {
		ai.Parts = append(ai.Parts, c)
	}
	l.ec.append(ai)

	delivered := false
	for _, c := range calls {
		// Events, the gate and the result name the tool as the policy does
		// (what operators write rules for); the model's history keeps the
		// function name it called.
		name, args := c.FunctionCall.Name, c.FunctionCall.Arguments
		pname := l.names.policy(name)
		l.emit(ctx, StepEvent{Type: StepToolCall, Step: step, Tool: pname, CallID: c.ID, Input: args})
		res := l.callTool(ctx, step, c.ID, name, args)
		l.emit(ctx, StepEvent{Type: StepToolResult, Step: step, Tool: pname, CallID: c.ID, Input: args, Output: res.Content, OK: res.OK})
		l.ec.append(llms.MessageContent{
			Role:  llms.ChatMessageTypeTool,
			Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: c.ID, Name: name, Content: res.Content}},
		})
		l.res.ToolCalls = append(l.res.ToolCalls, ToolCallRecord{Tool: pname, Input: decodeArgs(args), Output: res.Content})
		if res.Delivered {
			delivered = true
			l.res.Delivered = true
			l.lastDelivered = visibleText(args)
		}
	}
	return delivered
}

func (l *loop) callTool(ctx context.Context, step int, callID, name, args string) (res ToolResult) {
	t, ok := l.callable[name]
	if !ok {
		return errorResult(fmt.Sprintf("unknown tool %q", name))
	}
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	if !json.Valid([]byte(args)) {
		return errorResult("arguments are not valid JSON")
	}
	name = l.names.policy(name)
	if refused := l.gateCheck(ctx, step, callID, name, args); refused != nil {
		return *refused
	}
	defer func() {
		if p := recover(); p != nil {
			l.log.Error().Str("tool", name).Interface("panic", p).Msg("tool panicked")
			res = errorResult("the tool failed unexpectedly")
		}
	}()
	res = t.Call(ctx, json.RawMessage(args))
	if !res.OK {
		l.log.Warn().Str("tool", name).Str("result", res.Content).Msg("tool reported failure")
	}
	return res
}

func (l *loop) emit(ctx context.Context, ev StepEvent) {
	if l.in.OnStep != nil {
		l.in.OnStep(ctx, ev)
	}
}

func errorResult(msg string) ToolResult {
	b, _ := json.Marshal(map[string]any{"success": false, "error": msg})
	return ToolResult{Content: string(b)}
}

func decodeArgs(args string) map[string]any {
	m := map[string]any{}
	if strings.TrimSpace(args) == "" {
		return m
	}
	if err := json.Unmarshal([]byte(args), &m); err != nil {
		return map[string]any{"_raw": args}
	}
	return m
}

// visibleText is the "text" argument of a delivering tool call.
func visibleText(args string) string {
	var v struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal([]byte(args), &v)
	return v.Text
}
