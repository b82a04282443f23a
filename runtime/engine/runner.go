package engine

import (
	"context"
	"errors"
	"runtime/debug"
	"time"

	"github.com/rs/zerolog"
	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/events"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/journal"
	"github.com/shipmyagent/ship/runtime/llm"
	"github.com/shipmyagent/ship/runtime/metrics"
	"github.com/shipmyagent/ship/runtime/profiles"
	"github.com/shipmyagent/ship/runtime/queue"
	"github.com/shipmyagent/ship/runtime/usage"
)

// Runner runs queued jobs on the runtime: it puts the request context into
// the context, runs the agent, applies the final-output fallback and keeps
// the journal up to date. Its Handle method is the queue's handler.
type Runner struct {
	Runtime   *agent.Runtime
	Deliverer *dispatch.Deliverer
	// Events, when set, receives the run's events.
	Events *events.Bus
	// Journal, when set, is kept up to date for journaled jobs.
	Journal journal.Recorder
	// Redact hides known secret values in what leaves the process about a
	// tool call: the chat log's tool entries, the run's events and the
	// tool calls of its result; nil keeps the text.
	Redact func(string) string
	Log    zerolog.Logger

	gov    *governor    // fixes each run's policy scope; nil in a bare Runner
	picker *modelPicker // picks each run's model; nil: the runtime's own
	usage  *usage.Tally // counts each run's tokens; nil: not counted
	// profiles route each run to an agent profile; nil: none.
	profiles *profiles.Set
	metrics  *metrics.Set // counts each run (metrics.go); nil: not counted
}

// journaledRun returns the id of the journaled run ctx belongs to: the
// deliverer's BeforeSend records a send intent for it.
func journaledRun(ctx context.Context) (string, bool) {
	run, _ := dispatch.RunFrom(ctx)
	return run.JournalID, run.JournalID != ""
}

// Handle runs one item. Whoever waits for it (OnDone, event subscribers)
// hears back only once the journal has recorded the end: a caller that
// acts on the outcome (a test, a restart) must find the journal settled.
func (r *Runner) Handle(ctx context.Context, item queue.Item[ingress.Job]) {
	log := r.Log.With().Str("requestId", item.ID).Str("chatKey", item.ChatKey).
		Str("channel", item.Value.Route.Channel).Logger()
	route, routed := r.route(&item, &log)
	job := item.Value
	ctx = log.WithContext(ctx)
	// The run's state, in one value the context carries (dispatch.Run).
	refusals := &dispatch.Refusals{}
	ev := newRunEvents(r.Events, item, r.Redact)
	run := dispatch.Run{Request: job.Route, Refusals: refusals, Watcher: ev}
	if r.gov != nil {
		r.gov.begin(&run, job)
	}
	journaled := job.Journaled && r.Journal != nil
	if journaled {
		if err := r.Journal.Start(item.ID); err != nil {
			if journal.NotOurs(err) {
				r.leave(item, err, log)
				return
			}
			log.Error().Err(err).Msg("journal: recording the start of a run")
		}
		run.JournalID = item.ID
	}
	ctx = dispatch.WithRun(ctx, run)

	liveOpts := dispatch.LiveOptions{Resume: job.Streamed, Logger: log}
	if journaled {
		liveOpts.Visible = func(ids []string) error { return r.Journal.Streaming(item.ID, ids) }
	}
	live := dispatch.NewLive(ctx, r.Deliverer.Registry, job.Route, liveOpts)
	ctx = dispatch.WithLive(ctx, live)

	started := time.Now()
	ev.started(job.Text)
	ev.agent = profiles.DefaultName
	if routed {
		ev.routeDecided(route)
		ev.agent = route.Profile.Name
	}
	if job.Notice != "" {
		r.notice(ctx, job, log)
	}
	out := r.run(ctx, item, route.Profile.Prompt, ev, live, log)
	r.recordUsage(ctx, item, out.Result, log)
	out.Result.Artifacts, out.Result.Replies = ev.artifacts(), ev.delivered()
	// A run cut short by shutdown leaves what it showed for its resumed
	// run to take over.
	live.Close(ctx, journaled && errors.Is(ctx.Err(), context.Canceled))
	// A run cut short by shutdown stays pending: the next start resumes it
	// (unless it had begun replying).
	if journaled && !errors.Is(ctx.Err(), context.Canceled) {
		if err := r.Journal.Done(item.ID); err != nil {
			log.Error().Err(err).Msg("journal: recording the end of a run")
		}
	}
	refused, undelivered := refusals.Unresolved()
	if undelivered && journal.NotOurs(refused.Err) {
		// The run went on while another replica took the message over:
		// that one answers, and says how it went.
		log.Warn().Err(refused.Err).Msg("run ended here without sending; another replica answers this message")
		ev.dispatchCompleted(ctx, out.Result, refused.Err, time.Since(started))
		r.metrics.Turn(job.Route.Channel, metrics.OutcomeHandedOver, time.Since(started), started.Sub(item.Enqueued))
		if job.OnDone != nil {
			job.OnDone(ingress.Outcome{Result: out.Result, Err: refused.Err})
		}
		return
	}
	if undelivered && errors.Is(ctx.Err(), context.Canceled) && !dispatch.IsReplyRefused(refused.Err) {
		// Shutdown cut the send short, not the platform: the run is
		// resumed or settled by the next start.
		undelivered = false
	}
	if undelivered {
		r.reportUndelivered(ctx, refused, log)
		// Whoever waits for the outcome (/api/execute, a task's last
		// result) hears that the user did not get the answer.
		out.Result.Success = false
	}
	// A reply that did not reach the user makes the run failed.
	ev.dispatchCompleted(ctx, out.Result, out.Err, time.Since(started))
	if undelivered && out.Err == nil {
		// The run did its part, but the user is missing (part of) the
		// answer: the run's watchers hear that, not "completed".
		ev.undelivered(refused)
	} else {
		ev.finished(out.Result, out.Err, time.Since(started).Milliseconds())
	}
	r.countTurn(item, ev.model, out, started, errors.Is(ctx.Err(), context.Canceled), undelivered)
	if job.OnDone != nil {
		job.OnDone(out)
	}
}

// leave gives up a run before it starts because it is not this process's
// to make (journal.NotOurs): the item is forgotten here, and its waiter hears
// nothing from this replica (the cluster queue passes no such outcome on).
func (r *Runner) leave(item queue.Item[ingress.Job], why error, log zerolog.Logger) {
	if errors.Is(why, journal.ErrInDoubt) {
		log.Warn().Msg("recovery: a reply may have gone out from the replica that ran this message before; not running it again")
	} else {
		log.Warn().Err(why).Msg("not running this message here")
	}
	if err := r.Journal.Done(item.ID); err != nil {
		log.Error().Err(err).Msg("journal: recording the end of a run")
	}
	if item.Value.OnDone != nil {
		item.Value.OnDone(ingress.Outcome{Result: agent.AgentResult{ToolCalls: []agent.ToolCallRecord{}}, Err: why})
	}
}

// notice tells the chat, before the run, what it is about to do (an
// approved call), straight through the channel's dispatcher: it is the
// engine's note, not the model's reply, so it neither counts as the answer
// nor marks the journaled run as replying.
func (r *Runner) notice(ctx context.Context, job ingress.Job, log zerolog.Logger) {
	if err := r.Deliverer.Registry.SendText(ctx, job.Route, job.Notice); err != nil {
		log.Warn().Err(err).Msg("sending a run's notice")
	}
}

// reportUndelivered logs a reply that did not reach the user, with no
// reply delivered after it, and leaves a system entry in the chat's log.
func (r *Runner) reportUndelivered(ctx context.Context, u dispatch.Undelivered, log zerolog.Logger) {
	req, _ := dispatch.RequestFromContext(ctx)
	ev := log.Error().Err(u.Err).Str("messageId", req.MessageID)
	if u.Part > 0 {
		ev = ev.Int("part", u.Part).Int("parts", u.Parts)
	}
	ev.Msg("reply not delivered")
	if lerr := r.Deliverer.LogUndelivered(ctx, u); lerr != nil {
		log.Error().Err(lerr).Msg("logging an undelivered reply")
	}
}

// run runs the agent and the fallback; prompt, when set, replaces
// Agent.md (the run's agent profile). A panic in the run becomes a failed
// outcome: one bad turn must not leave its caller waiting forever.
func (r *Runner) run(ctx context.Context, item queue.Item[ingress.Job], prompt string, ev *runEvents, live *dispatch.Live, log zerolog.Logger) (out ingress.Outcome) {
	defer func() {
		if p := recover(); p != nil {
			log.Error().Interface("panic", p).Str("stack", string(debug.Stack())).Msg("run panicked")
			out = ingress.Outcome{Result: agent.AgentResult{ToolCalls: []agent.ToolCallRecord{}}, Err: errors.New("run crashed")}
		}
	}()
	job := item.Value
	audit := newAudit(r.Deliverer.Store, r.Redact, job.Route)
	var replies dispatch.ReplyTexts
	model, call, vision, name := r.pickModel(ctx, item.ChatKey, job, &log)
	ev.model = name
	ev.dispatchStarted(name, item.Enqueued)
	model = timed(model, name, r.metrics)
	// Streaming the answer from the model costs more than taking it whole
	// (the /api/execute benchmark: about a quarter of a turn with the HTTP
	// fake): ask for it only when someone sees it being written.
	watched := live.Shows() || job.OnStep != nil || (r.Events != nil && r.Events.Watches(events.Event{
		Type: events.TypeContent, TaskID: item.ID, ChatKey: item.ChatKey, Channel: job.Route.Channel}))
	// A checked output is held until it passes (guardrail.go): nothing of
	// it is streamed or sent before.
	hold := newHold(job.Output)
	ctx = dispatch.WithHold(ctx, hold)
	ev.held = func() bool { _, armed := hold.Check(); return armed }
	in := agent.AgentRunInput{
		Model:        model,
		Call:         call,
		Vision:       vision,
		Watched:      &watched,
		ChatKey:      item.ChatKey,
		Route:        job.Route,
		Instructions: job.Text,
		Preset:       job.Preset,
		Files:        job.Files,
		Prompt:       prompt,
		OnSession:    ev.session,
		OnStep: func(ctx context.Context, step agent.StepEvent) {
			switch step.Type {
			case agent.StepToolCallDelta:
				if _, held := hold.Check(); held {
					break
				}
				if text, ok := replies.Feed(step.Step, step.CallIndex, step.Tool, step.Text); ok {
					ev.replyText(step.Step, step.CallIndex, text)
					live.Writing(ctx, step.Step, step.CallIndex, text)
				}
			case agent.StepToolCall:
				live.ToolCall(step.Step, step.Tool)
			case agent.StepAttemptRestarted:
				replies.Restart(step.Step)
				live.Restart(ctx, step.Step)
			}
			ev.step(ctx, step)
			audit.step(ctx, step)
			if job.OnStep != nil {
				job.OnStep(ctx, step)
			}
		},
	}
	res, err := r.runAgent(ctx, job, in)
	if err != nil {
		log.Error().Err(err).Msg("run failed")
	}
	res.ToolCalls = redactCalls(res.ToolCalls, r.Redact)
	res, err = r.checkOutput(ctx, hold, in, res, err, ev, log)
	// What is sent from here on (the fallback) has passed the check or
	// is ship's own line.
	ctx = dispatch.WithoutHold(ctx)
	out = ingress.Outcome{Result: res, Err: err}
	if errors.Is(ctx.Err(), context.Canceled) {
		// Shutdown cut the run short: it stays pending and runs again at
		// the next start. A fallback now could not be sent, yet its send
		// intent would mark the message as answered.
		log.Info().Msg("run stopped by shutdown; it resumes at the next start")
		return out
	}
	sent, ferr := r.Deliverer.SendFinalOutputIfNeeded(ctx, res.Output, res.Delivered, log)
	if ferr != nil {
		log.Error().Err(ferr).Msg("final-output fallback failed")
	}
	out.FallbackSent = sent
	if sent {
		ev.fallback(res.Output)
	}
	log.Info().Bool("success", res.Success).Int("toolCalls", len(res.ToolCalls)).
		Bool("delivered", res.Delivered).Bool("fallback", sent).Msg("run finished")
	return out
}

// pickModel returns the model, call options, whether the model takes
// images and the model's name, for a run (nil and none without a picker),
// and names the model in the run's log lines.
func (r *Runner) pickModel(ctx context.Context, chatKey string, job ingress.Job, log *zerolog.Logger) (llms.Model, llm.CallOptions, *bool, string) {
	if r.picker == nil {
		return nil, job.Model.CallOptions, nil, ""
	}
	m, call := r.picker.forRun(ctx, chatKey, job.Model, *log)
	*log = log.With().Str("model", m.Name).Logger()
	vision := m.Config.VisionCapable()
	return m.LLM, call, &vision, m.Name
}

// runAgent runs the agent, unless the job already holds its whole answer
// (a voice note that could not be transcribed): that answer then goes out
// through the final-output fallback, logged like any reply.
func (r *Runner) runAgent(ctx context.Context, job ingress.Job, in agent.AgentRunInput) (agent.AgentResult, error) {
	if job.Answer != "" {
		return agent.AgentResult{Success: true, Output: job.Answer, ToolCalls: []agent.ToolCallRecord{}}, nil
	}
	return r.Runtime.Run(ctx, in)
}
