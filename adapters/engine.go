package adapters

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/events"
	"github.com/shipmyagent/ship/tools"
)

// EngineOptions configure the assembled core.
type EngineOptions struct {
	// ChatsDir is where the ChatStore keeps its files (<project>/.ship/chats).
	ChatsDir     string
	Durability   chat.Durability
	SegmentBytes int64
	Model        llms.Model
	AgentMDPath  string
	History      agent.HistoryLimits
	Queue        QueueOptions
	// Stream makes the runtime stream model text to OnStep listeners.
	Stream bool
	// UserLimit is the per-user message rate on platforms (see UserLimiter;
	// zero values take its generous defaults, Rate rate.Inf switches it off).
	UserLimit UserLimiterOptions
	// JournalPath, when set, keeps the durable record of accepted work
	// there (<project>/.ship/pending.jsonl); see Journal and Recover.
	JournalPath string
	// RetryBackoff is the first wait before a failed model call is retried
	// (0 → the runtime's default).
	RetryBackoff time.Duration
	Logger       zerolog.Logger
	// MaxTokens caps each model answer (0 → the runtime's default).
	MaxTokens int
}

// Engine is ship's core wired together: one ChatStore, one runtime with the
// default tools, one dispatcher registry, one global queue and the ingress
// path in front of it. Adapters and the HTTP server plug into it.
type Engine struct {
	// Events carries every run's events (task_started, content, …) to
	// SSE subscribers, whatever the channel.
	Events   *events.Bus
	Store    *chat.Store
	Registry *chat.Registry
	Runtime  *agent.Runtime
	Queue    *QueryQueue
	Ingress  *Ingress
	// Journal is nil without EngineOptions.JournalPath.
	Journal *Journal

	log       zerolog.Logger
	recovered []JournalItem
}

// NewEngine opens the store and starts the queue's workers.
func NewEngine(opts EngineOptions) (*Engine, error) {
	store, err := chat.OpenStore(chat.StoreOptions{Dir: opts.ChatsDir, Durability: opts.Durability, SegmentBytes: opts.SegmentBytes})
	if err != nil {
		return nil, fmt.Errorf("opening chat store: %w", err)
	}
	rt, err := agent.New(agent.Options{
		Model:        opts.Model,
		Tools:        tools.Default(store),
		Store:        store,
		AgentMDPath:  opts.AgentMDPath,
		History:      opts.History,
		Stream:       opts.Stream,
		RetryBackoff: opts.RetryBackoff,
		Logger:       opts.Logger,
		MaxTokens:    opts.MaxTokens,
	})
	if err != nil {
		_ = store.Close()
		return nil, fmt.Errorf("creating runtime: %w", err)
	}
	var journal *Journal
	var recovered []JournalItem
	if opts.JournalPath != "" {
		journal, recovered, err = OpenJournal(opts.JournalPath, opts.Durability != chat.DurabilityNone)
		if err != nil {
			_ = store.Close()
			return nil, err
		}
	}
	reg := chat.NewRegistry()
	bus := events.NewBus(0)
	runner := &Runner{Runtime: rt, Store: store, Registry: reg, Events: bus, Journal: journal, Log: opts.Logger}
	qopts := opts.Queue
	qopts.Logger = opts.Logger
	q := NewQueryQueue(runner.Handle, qopts)
	return &Engine{
		Events:    bus,
		Store:     store,
		Registry:  reg,
		Runtime:   rt,
		Queue:     q,
		Ingress:   &Ingress{Store: store, Queue: q, Journal: journal, Limiter: NewUserLimiter(opts.UserLimit), Log: opts.Logger},
		Journal:   journal,
		log:       opts.Logger,
		recovered: recovered,
	}, nil
}

// Close stops intake, lets running items finish (or cancels them when ctx
// ends first), then closes the store. It returns the items that were still
// waiting: they are in the ChatStore but were not answered. Each of them that
// has an OnDone hook is told so with Outcome.Err wrapping ErrQueueStopped, so
// nobody waits for a run that will not happen in this process.
func (e *Engine) Close(ctx context.Context) ([]QueueItem, error) {
	stopErr := e.Queue.Stop(ctx)
	pending := e.Queue.Pending()
	for _, it := range pending {
		// Streams following this run hear that it will not happen here.
		e.Events.Publish(events.Event{Type: events.TypeError, TaskID: it.ID, ChatKey: it.ChatKey, Channel: it.Request.Channel,
			UserMessageID: it.Request.MessageID, ErrorCode: "SHUTTING_DOWN", ErrorMessage: "ship stopped before this message's turn; it is kept in the chat log"})
		if it.OnDone != nil {
			it.OnDone(Outcome{
				Result: agent.AgentResult{ToolCalls: []agent.ToolCallRecord{}},
				Err:    fmt.Errorf("item %s not run: %w", it.ID, ErrQueueStopped),
			})
		}
	}
	closeErr := e.Store.Close()
	if e.Journal != nil {
		if err := e.Journal.Close(); err != nil && closeErr == nil {
			closeErr = err
		}
	}
	if stopErr != nil {
		stopErr = fmt.Errorf("stopping queue: %w", stopErr)
	}
	if closeErr != nil {
		closeErr = fmt.Errorf("closing chat store: %w", closeErr)
	}
	return pending, errors.Join(stopErr, closeErr)
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
		log := e.log.With().Str("chatKey", it.ChatKey).Str("requestId", it.ID).Str("messageId", it.Request.MessageID).Logger()
		if it.Request.MessageID != "" {
			e.Ingress.seen.add(it.ChatKey + "\x00" + it.Request.MessageID)
		}
		switch {
		case it.Sends > 0:
			log.Warn().Msg("recovery: a reply may have gone out before the crash; not running this message again")
			_ = e.Journal.Done(it.ID)
		case it.Attempts >= maxAttempts:
			log.Error().Int("attempts", it.Attempts).Msg("recovery: message marked failed after repeated interrupted runs")
			if _, err := e.Store.Append(ctx, chat.ChatLogEntryV1{
				Channel: it.Request.Channel, ChatID: it.Request.ChatID, ChatKey: it.ChatKey, MessageID: it.Request.MessageID,
				Role: chat.RoleSystem, Text: fmt.Sprintf("not answered: failed after %d interrupted runs", it.Attempts),
			}); err != nil {
				log.Error().Err(err).Msg("recovery: logging a failed message")
			}
			_ = e.Journal.Done(it.ID)
		default:
			if err := e.restoreUserEntry(ctx, it); err != nil {
				log.Error().Err(err).Msg("recovery: restoring the message in the chat log")
			}
			_, err := e.Queue.Enqueue(QueueItem{ID: it.ID, ChatKey: it.ChatKey, Request: it.Request, Instructions: it.Text, Journaled: true})
			if err != nil {
				log.Error().Err(err).Msg("recovery: queueing an interrupted message; it stays in the journal")
				continue
			}
			log.Info().Int("attempt", it.Attempts+1).Msg("recovery: running a message accepted before the last stop")
			queued++
		}
	}
	e.recovered = nil
	return queued
}

// restoreUserEntry appends the message to its chat log when the crash lost
// it (the journal, not the log, made it durable).
func (e *Engine) restoreUserEntry(ctx context.Context, it JournalItem) error {
	if it.Request.MessageID != "" {
		recent, err := e.Store.Recent(ctx, it.ChatKey, historyCheck)
		if err != nil {
			return err
		}
		for _, en := range recent {
			if en.Role == chat.RoleUser && en.MessageID == it.Request.MessageID {
				return nil
			}
		}
	}
	_, err := e.Store.Append(ctx, chat.ChatLogEntryV1{
		Channel: it.Request.Channel, ChatID: it.Request.ChatID, ChatKey: it.ChatKey, UserID: it.Request.UserID,
		MessageID: it.Request.MessageID, Role: chat.RoleUser, Text: it.Text, Meta: map[string]any{"restored": true},
	})
	return err
}
