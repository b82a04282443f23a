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
	// RetryBackoff is the first wait before a failed model call is retried
	// (0 → the runtime's default).
	RetryBackoff time.Duration
	Logger       zerolog.Logger
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
	})
	if err != nil {
		_ = store.Close()
		return nil, fmt.Errorf("creating runtime: %w", err)
	}
	reg := chat.NewRegistry()
	bus := events.NewBus(0)
	runner := &Runner{Runtime: rt, Store: store, Registry: reg, Events: bus, Log: opts.Logger}
	qopts := opts.Queue
	qopts.Logger = opts.Logger
	q := NewQueryQueue(runner.Handle, qopts)
	return &Engine{
		Events:   bus,
		Store:    store,
		Registry: reg,
		Runtime:  rt,
		Queue:    q,
		Ingress:  &Ingress{Store: store, Queue: q, Log: opts.Logger},
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
	if stopErr != nil {
		stopErr = fmt.Errorf("stopping queue: %w", stopErr)
	}
	if closeErr != nil {
		closeErr = fmt.Errorf("closing chat store: %w", closeErr)
	}
	return pending, errors.Join(stopErr, closeErr)
}
