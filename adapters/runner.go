package adapters

import (
	"context"
	"errors"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/events"
)

// Outcome is how a queued message ended.
type Outcome struct {
	Result agent.AgentResult
	// Err is the run's error, if any (Result.Output then holds one short
	// line fit for the user).
	Err error
	// FallbackSent says the final-output fallback delivered Result.Output.
	FallbackSent bool
}

// Runner runs queued items on the runtime: it puts the request context and
// the dispatcher registry into the context, runs the agent and applies the
// final-output fallback. Its Handle method is the QueueHandler.
type Runner struct {
	Runtime  *agent.Runtime
	Store    *chat.Store
	Registry *chat.Registry
	// Events, when set, receives the run's events.
	Events *events.Bus
	// Journal, when set, is kept up to date for journaled items.
	Journal *Journal
	Log     zerolog.Logger
}

// Handle runs one item.
func (r *Runner) Handle(ctx context.Context, item QueueItem) {
	log := r.Log.With().Str("requestId", item.ID).Str("chatKey", item.ChatKey).
		Str("channel", item.Request.Channel).Logger()
	ctx = log.WithContext(ctx)
	ctx = chat.WithRequest(ctx, item.Request)
	ctx = chat.WithRegistry(ctx, r.Registry)
	if item.Journaled && r.Journal != nil {
		if err := r.Journal.Start(item.ID); err != nil {
			log.Error().Err(err).Msg("journal: recording the start of a run")
		}
		// A reply is recorded before it goes out, so a crash after it can
		// never lead to a second one.
		ctx = chat.WithBeforeSend(ctx, func() error { return r.Journal.Sending(item.ID) })
		defer func() {
			if errors.Is(ctx.Err(), context.Canceled) {
				// Cut short by shutdown: left pending, the next start
				// resumes it (unless it had begun replying).
				return
			}
			if err := r.Journal.Done(item.ID); err != nil {
				log.Error().Err(err).Msg("journal: recording the end of a run")
			}
		}()
	}

	started := time.Now()
	ev := newRunEvents(r.Events, item)
	ev.started(item.Instructions)
	finished := false
	defer func() {
		// Whoever waits must hear back even when the run panics (the queue
		// logs the panic itself): OnDone callers and event subscribers.
		if finished {
			return
		}
		crashed := Outcome{Result: agent.AgentResult{Output: "", ToolCalls: []agent.ToolCallRecord{}}, Err: errors.New("run crashed")}
		ev.finished(crashed.Result, crashed.Err, time.Since(started).Milliseconds())
		if item.OnDone != nil {
			item.OnDone(crashed)
		}
	}()
	res, err := r.Runtime.Run(ctx, agent.AgentRunInput{
		ChatKey:      item.ChatKey,
		Instructions: item.Instructions,
		OnStep: func(ctx context.Context, step agent.StepEvent) {
			ev.step(ctx, step)
			if item.OnStep != nil {
				item.OnStep(ctx, step)
			}
		},
	})
	if err != nil {
		log.Error().Err(err).Msg("run failed")
	}
	out := Outcome{Result: res, Err: err}
	sent, ferr := chat.SendFinalOutputIfNeeded(ctx, r.Store, res.Output, res.Delivered, log)
	if ferr != nil {
		log.Error().Err(ferr).Msg("final-output fallback failed")
	}
	out.FallbackSent = sent
	if sent {
		ev.fallback(res.Output)
	}
	ev.finished(res, err, time.Since(started).Milliseconds())
	log.Info().Bool("success", res.Success).Int("toolCalls", len(res.ToolCalls)).
		Bool("delivered", res.Delivered).Bool("fallback", sent).Msg("run finished")
	finished = true
	if item.OnDone != nil {
		item.OnDone(out)
	}
}
