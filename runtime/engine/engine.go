// Package engine assembles ship's core: the ChatStore, the agent runtime
// with its tools, the dispatcher registry, the pending-work journal, the
// global queue and the ingress path in front of it, and the Runner that
// turns each queued job into a run. Nobody reaches its parts: platforms get
// the narrow methods of adapters.Host (Accept, Record, Position, Command),
// the HTTP API and the console a Door (Submit, Subscribe, Register, Decide)
// and a read-only View, and the binary starts, recovers and closes it.
package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/events"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/jobs"
	"github.com/shipmyagent/ship/runtime/journal"
	"github.com/shipmyagent/ship/runtime/media"
	"github.com/shipmyagent/ship/runtime/memory"
	"github.com/shipmyagent/ship/runtime/metrics"
	"github.com/shipmyagent/ship/runtime/models"
	"github.com/shipmyagent/ship/runtime/policy"
	"github.com/shipmyagent/ship/runtime/profiles"
	"github.com/shipmyagent/ship/runtime/questions"
	"github.com/shipmyagent/ship/runtime/queue"
	"github.com/shipmyagent/ship/runtime/records"
	"github.com/shipmyagent/ship/runtime/usage"
)

// Options configure the assembled core.
type Options struct {
	// ChatsDir is where the ChatStore keeps its files (<project>/.ship/chats).
	ChatsDir     string
	Durability   chat.Durability
	SegmentBytes int64
	Model        llms.Model
	// ModelName is what /status shows ("openai/gpt-4o-mini").
	ModelName   string
	AgentMDPath string
	History     agent.HistoryLimits
	Queue       queue.Options
	// Tools builds the tools offered to the model from the store and the
	// deliverer the engine creates; nil offers none.
	Tools func(store chat.Log, d *dispatch.Deliverer) []agent.Tool
	// Stream makes the runtime stream model text to OnStep listeners.
	Stream bool
	// UserLimit is the per-user message rate on platforms (see
	// ingress.UserLimiter; zero values take its generous defaults, Rate
	// rate.Inf switches it off).
	UserLimit ingress.UserLimiterOptions
	// JournalPath, when set, keeps the durable record of accepted work
	// there (<project>/.ship/pending.jsonl); see Recover.
	JournalPath string
	// RetryBackoff is the first wait before a failed model call is retried
	// (0 → the runtime's default).
	RetryBackoff time.Duration
	// MaxTokens caps each model answer (0 → the runtime's default).
	MaxTokens int
	// Policy returns the tool policy in force; each run asks once, when it
	// starts, so an edit applies from the next turn. Nil means no rules:
	// the chat_* tools are allowed and every other tool is denied.
	Policy func() *policy.Policy
	// ApprovalsPath, when set, keeps pending approvals and grants there
	// (<project>/.ship/approvals.json), so they survive a restart. Without
	// it a call that needs approval is refused.
	ApprovalsPath string
	// Approvals, when set, keeps approvals and grants in this shared table
	// instead of ApprovalsPath (cluster mode: an approval asked on one
	// replica is answered on another, its grant used wherever the run is).
	Approvals records.Table
	// Toolboxes offer tools that change while ship runs (MCP servers).
	Toolboxes []agent.Toolbox
	// PromptSections add text to every run's system prompt (the skills).
	PromptSections []func() string
	// SummaryModel names the model (of Models) that summarises a chat's
	// oldest turns when its history passes the limits; "" is the default
	// model.
	SummaryModel string
	// Notes adds a chat's long-term notes to its runs' system prompt
	// (agent.Options.Notes).
	Notes func(ctx context.Context, chatKey string, route dispatch.RequestContext) string
	// Memory keeps the long-term notes: /memory shows them, and they are
	// the Notes of every run when Notes is nil. Nil: no notes.
	Memory *memory.Store
	// Observe sees every message once it is logged (the contacts book).
	Observe func(ctx context.Context, s ingress.Submission)
	// Questions keeps the questions the ask tool asks; nil: /answer and
	// numbered answers are not taken.
	Questions *questions.Store
	// Redact hides known secret values in what the chat log keeps of tool
	// calls; nil keeps the text.
	Redact func(string) string
	// Models are the configured models a chat may switch to (/model) and
	// an API request may name; nil makes Model the only one. With Models,
	// Model may be nil (the catalog's default answers).
	Models *models.Catalog
	// ModelChoicesPath, when set, keeps each chat's /model choice there
	// (<project>/.ship/models.json), so it survives a restart.
	ModelChoicesPath string
	// ModelChoices, when set, keeps the choices there instead, one record
	// per chat (cluster mode: a /model made through one replica applies
	// on every replica from the chat's next turn).
	ModelChoices records.Table
	// ModelSwitch is who may switch a chat's model (llm.switch; "" is
	// models.SwitchPrivate).
	ModelSwitch string
	// Profiles are the agent profiles (agents in ship.json); nil: every
	// message is answered as without profiles.
	Profiles *profiles.Set

	// Store, when set, is the chat log to use instead of the files under
	// ChatsDir (cluster mode: JetStream); the engine closes it.
	Store chat.Log
	// Shared, Claims and Runs put the engine in cluster mode: messages
	// are queued in the shared stream (and run here when the cluster
	// hands them over with Take), "seen before" is cluster-wide, and runs
	// record send intents in the shared run state instead of JournalPath.
	Shared ingress.Shared
	Claims ingress.Claims
	Runs   journal.Recorder

	// Events, when set, is the bus run events go on instead of a new
	// one: cluster mode relays it to and from the other replicas.
	Events *events.Bus

	// Vision shows the images people send to the model, read through
	// Files (config.FileStore: in a cluster it fetches what another
	// replica received).
	Vision bool
	Files  *media.Store
	Logger zerolog.Logger

	// Usage, when set, counts every run's tokens (and logs them in the
	// chat); TokenBudget refuses turns once today's budget is used up.
	Usage       *usage.Tally
	TokenBudget usage.Budget

	// Jobs runs background jobs (exec_shell with background: true); the
	// engine brings their results back to their chats and closes it.
	Jobs *jobs.Manager
	// SubAgents, with Jobs, offers agent_spawn (subagents.go); nil: off.
	SubAgents *SubAgentOptions
	// Metrics, when set, counts turns, model calls and tokens and reads
	// the queue, approvals and jobs at each scrape (metrics.go).
	Metrics *metrics.Set
}

// Engine is ship's core wired together.
type Engine struct {
	events   *events.Bus
	store    chat.Log
	registry *dispatch.Registry
	runtime  *agent.Runtime
	queue    *ingress.Queue
	ingress  *ingress.Ingress
	journal  *journal.Journal // nil without Options.JournalPath
	runs     journal.Recorder // journal, or the cluster's run state; nil without either

	log       zerolog.Logger
	recovered []journal.Item

	gov       *governor
	questions *questions.Store // nil without Options.Questions
	memory    *memory.Store    // nil without Options.Memory

	picker *modelPicker
	// reloadable is the default model's label and llm.switch (SetModels).
	reloadable atomic.Pointer[reloadable]
	profiles   *profiles.Set // agents; nil without

	usage *usage.Tally  // nil without Options.Usage
	jobs  *jobs.Manager // nil without Options.Jobs
	sub   *subAgents    // nil without Options.SubAgents

	metrics *metrics.Set // nil without Options.Metrics

	// bg owns the engine's own goroutines (the approval sweeper, notes);
	// Close ends them.
	bgCtx    context.Context
	bgCancel context.CancelFunc
	// sweepCancel ends the sweeper first: it never ends by itself.
	sweepCancel context.CancelFunc
	bgMu        sync.Mutex
	bg          sync.WaitGroup
	closed      bool
}

// New opens the store and the journal and starts the queue's workers.
func New(opts Options) (*Engine, error) {
	picker, switchRule, err := newPicker(&opts)
	if err != nil {
		return nil, err
	}
	st, err := openState(opts)
	if err != nil {
		return nil, err
	}
	reg := dispatch.NewRegistry()
	deliverer := &dispatch.Deliverer{Registry: reg, Store: st.store}
	if st.runs != nil {
		deliverer.BeforeSend = func(ctx context.Context) error {
			if id, ok := journaledRun(ctx); ok {
				return st.runs.Sending(id)
			}
			return nil
		}
	}
	var tools []agent.Tool
	if opts.Tools != nil {
		tools = opts.Tools(st.store, deliverer)
	}
	sub := newSubAgents(opts.SubAgents, opts.Jobs != nil, opts.Redact)
	if sub != nil {
		tools = append(tools, sub.tool)
	}
	gov, err := newGovernor(opts, reg, tools)
	if err != nil {
		st.close()
		return nil, err
	}
	var summaryModel llms.Model
	if opts.SummaryModel != "" {
		m, ok := picker.catalog().Get(opts.SummaryModel)
		if !ok {
			st.close()
			return nil, fmt.Errorf("history.summaryModel: no model %q in llm.models (have %s)", opts.SummaryModel, strings.Join(picker.catalog().Names(), ", "))
		}
		summaryModel = m.LLM
	}
	if opts.Notes == nil && opts.Memory != nil {
		opts.Notes = opts.Memory.Prompt
	}
	rt, err := agent.New(agent.Options{
		SummaryModel: summaryModel,
		Gate:         gov, Toolboxes: opts.Toolboxes, PromptSections: opts.PromptSections, Notes: opts.Notes, Model: opts.Model, Tools: tools,
		Store: st.store, AgentMDPath: opts.AgentMDPath, History: opts.History, Stream: opts.Stream,
		RetryBackoff: opts.RetryBackoff, MaxTokens: opts.MaxTokens, Vision: opts.Vision, Files: opts.Files,
		Logger: opts.Logger,
	})
	if err != nil {
		st.close()
		return nil, fmt.Errorf("creating runtime: %w", err)
	}
	bus := opts.Events
	if bus == nil {
		bus = events.NewBus(0)
	}
	runner := &Runner{Runtime: rt, Deliverer: deliverer, Events: bus, Journal: st.runs, Redact: opts.Redact, Log: opts.Logger, gov: gov,
		picker: picker, usage: opts.Usage, profiles: opts.Profiles, metrics: opts.Metrics}
	qopts := opts.Queue
	qopts.Logger = opts.Logger
	q := queue.New(runner.Handle, qopts)
	e := &Engine{
		events: bus, store: st.store, registry: reg, runtime: rt, queue: q,
		ingress: ingress.New(ingress.Options{
			Store: st.store, Queue: q, Journal: st.journal, Limiter: ingress.NewUserLimiter(opts.UserLimit), Observe: opts.Observe, Logger: opts.Logger,
			Shared: opts.Shared, Claims: opts.Claims, OnRefused: countRefused(opts.Metrics, refusedEvent(bus)),
			Budget: budgetCheck(opts.Usage, opts.TokenBudget, gov),
		}),
		journal: st.journal, runs: st.runs, log: opts.Logger, recovered: st.recovered, gov: gov,
		picker: picker, profiles: opts.Profiles, questions: opts.Questions, memory: opts.Memory, usage: opts.Usage,
		metrics: opts.Metrics,
	}
	e.reloadable.Store(&reloadable{label: opts.ModelName, switchRule: switchRule})
	e.bgCtx, e.bgCancel = context.WithCancel(context.Background())
	e.startJobs(opts.Jobs)
	e.watchGauges(opts.Metrics)
	if e.sub = sub; sub != nil {
		sub.tool.e.Store(e)
	}
	var sweepCtx context.Context
	sweepCtx, e.sweepCancel = context.WithCancel(e.bgCtx)
	if e.gov.approvals != nil {
		e.goBackground(func(context.Context) { e.sweep(sweepCtx) })
	}
	return e, nil
}

// Register makes d the dispatcher of channel: replies to that channel's
// messages go through it.
func (e *Engine) Register(channel string, d dispatch.Dispatcher) { e.registry.Register(channel, d) }

// Accept takes a platform message through the front door
// (ingress.Submit). Platforms deliver again: it is deduplicated; a refused
// one is kept in the log with its refusal, since the platform is
// acknowledged either way, and a re-delivery of it is then a duplicate.
// A message refused for its token budget is answered here, in the chat,
// and is no error of the platform's.
func (e *Engine) Accept(ctx context.Context, s ingress.Submission) (ingress.Ticket, error) {
	s.Once, s.KeepRefused = true, true
	e.takeNumberedAnswer(&s)
	t, err := e.ingress.Submit(ctx, s)
	if err != nil && e.tellBudget(s, err) {
		return ingress.Ticket{}, nil
	}
	return t, err
}

// Record logs a platform message that is not addressed to the bot, once.
func (e *Engine) Record(ctx context.Context, s ingress.Submission) error {
	return e.ingress.RecordOnce(ctx, s)
}

// Position reports where queued item id stands (0: running).
func (e *Engine) Position(id string) (int, bool) { return e.queue.Position(id) }

// Close stops intake, lets running items finish (or cancels them when ctx
// ends first), then closes the store. It returns the items that were still
// waiting: they are in the ChatStore but were not answered. Each of them that
// has an OnDone hook is told so with Outcome.Err wrapping
// queue.ErrQueueStopped, so nobody waits for a run that will not happen in
// this process.
func (e *Engine) Close(ctx context.Context) ([]queue.Item[ingress.Job], error) {
	if e.jobs != nil {
		e.jobs.Close() // running jobs stay recorded as running: the next start reports them
	}
	stopErr := e.queue.Stop(ctx)
	e.stopBackground(ctx)
	pending := e.queue.Pending()
	for _, it := range pending {
		// Streams following this run hear that it will not happen here.
		e.events.Publish(events.Event{Type: events.TypeError, TaskID: it.ID, ChatKey: it.ChatKey, Channel: it.Value.Route.Channel,
			UserMessageID: it.Value.Route.MessageID, ErrorCode: "SHUTTING_DOWN", ErrorMessage: "ship stopped before this message's turn; it is kept in the chat log"})
		if it.Value.OnDone != nil {
			it.Value.OnDone(ingress.Outcome{
				Result: agent.AgentResult{ToolCalls: []agent.ToolCallRecord{}},
				Err:    fmt.Errorf("item %s not run: %w", it.ID, queue.ErrQueueStopped),
			})
		}
	}
	closeErr := e.store.Close()
	if closeErr != nil {
		closeErr = fmt.Errorf("closing chat store: %w", closeErr)
	}
	if e.journal != nil {
		if err := e.journal.Close(); err != nil {
			closeErr = errors.Join(closeErr, fmt.Errorf("closing journal: %w", err))
		}
	}
	if e.usage != nil {
		// The runs have ended: their counts go to the day's file now,
		// not FlushEvery later.
		if err := e.usage.Flush(); err != nil {
			closeErr = errors.Join(closeErr, fmt.Errorf("saving token usage: %w", err))
		}
	}
	if stopErr != nil {
		stopErr = fmt.Errorf("stopping queue: %w", stopErr)
	}
	return pending, errors.Join(stopErr, closeErr)
}

// stopBackground ends the sweeper and lets notes on their way finish
// while ctx lasts.
func (e *Engine) stopBackground(ctx context.Context) {
	e.bgMu.Lock()
	e.closed = true
	e.bgMu.Unlock()
	e.sweepCancel()
	done := make(chan struct{})
	go func() { e.bg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	e.bgCancel()
	<-done
}

// goBackground runs fn on the engine's background, unless it is closing.
func (e *Engine) goBackground(fn func(ctx context.Context)) {
	e.bgMu.Lock()
	defer e.bgMu.Unlock()
	if e.closed {
		return
	}
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		fn(e.bgCtx)
	}()
}

// maxAttempts is how many interrupted runs a message gets before it is
// marked failed: a message that crashes ship every time must not keep it
// in a crash loop.
const maxAttempts = 3

// Recover handles what the journal held at start-up, once the platforms'
// dispatchers are registered: every message accepted before a crash is run
// again, unless its run had begun replying (it is left alone: a reply is
// never sent twice) or it was interrupted maxAttempts times (it is marked
// failed, in the log and the chat log). It returns how many were queued.
func (e *Engine) Recover(ctx context.Context) int {
	queued := 0
	for _, it := range e.recovered {
		log := e.log.With().Str("chatKey", it.ChatKey).Str("requestId", it.ID).Str("messageId", it.Route.MessageID).Logger()
		if e.settleInterrupted(ctx, it, log) {
			continue
		}
		if err := e.ingress.Resume(ctx, it); err != nil {
			log.Error().Err(err).Msg("recovery: the message stays in the journal")
			continue
		}
		log.Info().Int("attempt", it.Attempts+1).Msg("recovery: running a message accepted before the last stop")
		queued++
	}
	e.recovered = nil
	e.reportInterruptedJobs()
	return queued
}

// Take runs here an item the cluster's shared queue handed this replica.
// An item an earlier replica began (it died mid-run) gets the rules of
// Recover: run again, left alone when it may have replied, or marked
// failed after maxAttempts. onDone hears the outcome of a run.
func (e *Engine) Take(ctx context.Context, it journal.Item, onDone func(ingress.Outcome)) error {
	log := e.log.With().Str("chatKey", it.ChatKey).Str("requestId", it.ID).Str("messageId", it.Route.MessageID).Logger()
	if it.Attempts > 0 || it.Sends > 0 {
		if e.settleInterrupted(ctx, it, log) {
			return nil
		}
		log.Info().Int("attempt", it.Attempts+1).Msg("cluster: running a message whose run was interrupted on another replica")
	}
	return e.ingress.Run(it, onDone)
}

// settleInterrupted applies the never-answer-twice rules to an item whose
// run was interrupted (a crash, a replica's death). It reports whether the
// item is settled; false means it should run again.
func (e *Engine) settleInterrupted(ctx context.Context, it journal.Item, log zerolog.Logger) bool {
	e.clearTyping(it, log)
	switch {
	case it.Sends > 0:
		e.ingress.Remember(it.ChatKey, it.Route.MessageID)
		log.Warn().Msg("recovery: a reply may have gone out before the crash; not running this message again")
		if len(it.Streamed) > 0 {
			e.removeStreamed(it, log)
		}
		e.settle(it.ID, log)
		return true
	case it.Attempts >= maxAttempts:
		e.ingress.Remember(it.ChatKey, it.Route.MessageID)
		log.Error().Int("attempts", it.Attempts).Msg("recovery: message marked failed after repeated interrupted runs")
		if _, err := e.store.Append(ctx, chat.ChatLogEntryV1{
			Channel: it.Route.Channel, ChatID: it.Route.ChatID, ChatKey: it.ChatKey, MessageID: it.Route.MessageID,
			Role: chat.RoleSystem, Text: fmt.Sprintf("not answered: failed after %d interrupted runs", it.Attempts),
		}); err != nil {
			log.Error().Err(err).Msg("recovery: logging a failed message")
		}
		e.settle(it.ID, log)
		return true
	}
	return false
}

// settle marks a recovered item done in the journal.
func (e *Engine) settle(id string, log zerolog.Logger) {
	if err := e.runs.Done(id); err != nil {
		log.Error().Err(err).Msg("recovery: recording the end of a message")
	}
}

// clearTyping takes down a typing indicator a crashed run left on the
// message (a Feishu reaction), in the background: start-up does not wait
// on a platform.
func (e *Engine) clearTyping(it journal.Item, log zerolog.Logger) {
	d, ok := e.registry.Lookup(it.Route.Channel)
	tc, isCleaner := d.(dispatch.TypingCleaner)
	if !ok || !isCleaner {
		return
	}
	e.goBackground(func(ctx context.Context) {
		if err := tc.ClearTyping(ctx, it.Route); err != nil {
			log.Warn().Err(err).Msg("recovery: removing a typing indicator")
		}
	})
}

// removeStreamed takes out of the chat a reply that was being written when
// ship stopped, of a run that is not run again (it had replied before): a
// truncated reply must not stay as if it were the answer.
func (e *Engine) removeStreamed(it journal.Item, log zerolog.Logger) {
	d, _ := e.registry.Lookup(it.Route.Channel)
	e.goBackground(func(ctx context.Context) {
		if err := dispatch.RemoveShown(ctx, d, it.Route, it.Streamed); err != nil {
			log.Warn().Err(err).Msg("recovery: removing an unfinished streamed reply")
		}
	})
}
