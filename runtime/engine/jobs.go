package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/events"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/jobs"
	"github.com/shipmyagent/ship/runtime/policy"
	"github.com/shipmyagent/ship/runtime/turn"
)

// jobResultLimit caps how much of a job's result the new turn carries.
const jobResultLimit = 16 << 10

// Job is a background job as the console sees it.
type Job = jobs.Job

// Why CancelJob stopped nothing (besides ErrJobsOff).
var (
	ErrJobUnknown    = jobs.ErrUnknown
	ErrJobNotRunning = jobs.ErrNotRunning
)

// ErrJobsOff is returned by CancelJob when ship runs without background
// jobs.
var ErrJobsOff = errors.New("background jobs are not enabled")

// startJobs makes the engine the one told of background jobs: their
// events go on the bus, and a job that ends comes back to its chat.
func (e *Engine) startJobs(m *jobs.Manager) {
	if m == nil {
		return
	}
	e.jobs = m
	m.SetHooks(jobs.Hooks{
		Started: func(j jobs.Job) { e.publishJob(events.TypeJobStarted, j) },
		Ended:   e.jobEnded,
	})
}

// publishJob puts a job event on the bus.
func (e *Engine) publishJob(typ string, j jobs.Job) {
	info := &events.Job{JobID: j.ID, Tool: j.Tool, Label: j.Label, State: string(j.State)}
	if j.Lease != nil {
		info.LeaseID, info.LeaseExpired = j.Lease.ID, j.Lease.Expired
	}
	if typ == events.TypeJobFinished {
		code := j.ExitCode
		info.ExitCode, info.DurationMS, info.CancelledBy = &code, j.Duration(time.Now()).Milliseconds(), j.CancelledBy
	}
	e.events.Publish(events.Event{Type: typ, Timestamp: time.Now().UnixMilli(), ChatKey: j.ChatKey, Channel: j.Route.Channel, Job: info})
}

// jobEnded brings a job's result to its chat as a new turn through the
// front door, so the agent sees it and answers. A cancelled job gets a
// note instead: whoever cancelled it does not want its result.
func (e *Engine) jobEnded(j jobs.Job, res jobs.Result) {
	e.publishJob(events.TypeJobFinished, j)
	e.metrics.JobFinished(string(j.State))
	log := e.log.With().Str("chatKey", j.ChatKey).Str("job", j.ID).Logger()
	log.Info().Str("state", string(j.State)).Int("exitCode", j.ExitCode).Msg("background job ended")
	if j.State == jobs.Cancelled {
		e.jobNote(j, fmt.Sprintf("Job %s (%s) was cancelled by %s; it was stopped and will not report.", j.ID, j.Label, j.CancelledBy),
			"job "+j.ID+" cancelled by "+j.CancelledBy)
		return
	}
	outcome := "finished"
	if j.State == jobs.Failed {
		outcome = "failed"
	}
	text := fmt.Sprintf("[job %s (%s) %s after %s: exit %d, output %s]\nThis is the result of a background job started earlier in this chat; tell the person what it means.",
		j.ID, j.Label, outcome, j.Duration(time.Now()).Round(time.Second), j.ExitCode, clip(res.Content, jobResultLimit))
	if j.Tool == SubAgentTool {
		text = subAgentText(j, outcome, res.Content)
	}
	e.goBackground(func(ctx context.Context) {
		_, err := e.ingress.Submit(ctx, ingress.Submission{
			Channel: j.Route.Channel, ChatKey: j.ChatKey,
			Message: ingress.IncomingChatMessage{
				ChatID: j.Route.ChatID, ChatType: j.Route.ChatType, MessageThreadID: j.Route.MessageThreadID, ThreadID: j.Route.ThreadID,
				UserID: j.Route.UserID, Username: j.Route.Username, MessageID: j.Route.MessageID, Text: text,
			},
			Meta: map[string]any{"job": j.ID, "jobState": string(j.State)},
			// The turn is the starter's: their rights apply to what the
			// model does with the result.
			Turn: turn.Turn{Identity: j.Identity},
			// Ship's own message, not the starter's next one.
			Unlimited: true,
		})
		if err != nil {
			log.Error().Err(err).Msg("queueing a background job's result")
			e.jobNote(j, fmt.Sprintf("Job %s (%s) %s (exit %d), but I could not bring its result here: %v", j.ID, j.Label, outcome, j.ExitCode, err),
				"job "+j.ID+" result not queued")
		}
	})
}

// reportInterruptedJobs tells each chat, once, of its jobs that were
// running when ship stopped. They are never run again.
func (e *Engine) reportInterruptedJobs() {
	if e.jobs == nil {
		return
	}
	for _, j := range e.jobs.Unreported() {
		e.publishJob(events.TypeJobFinished, j)
		e.jobNote(j, fmt.Sprintf("Job %s (%s) was interrupted when ship stopped; it did not finish. Ask again to run it.", j.ID, j.Label),
			"job "+j.ID+" interrupted")
		if err := e.jobs.MarkReported(j.ID); err != nil {
			e.log.Error().Err(err).Str("job", j.ID).Msg("recording that an interrupted job was reported")
		}
	}
}

// jobNote sends text into a job's chat in the background and leaves a
// system entry in the chat log.
func (e *Engine) jobNote(j jobs.Job, text, logText string) {
	e.goBackground(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, noteTimeout)
		defer cancel()
		log := e.log.With().Str("chatKey", j.ChatKey).Str("job", j.ID).Logger()
		if _, err := e.store.Append(ctx, chat.ChatLogEntryV1{
			Channel: j.Route.Channel, ChatID: j.Route.ChatID, ChatKey: j.ChatKey, Role: chat.RoleSystem, Text: logText,
			Meta: map[string]any{"job": j.ID, "jobState": string(j.State)},
		}); err != nil {
			log.Error().Err(err).Msg("logging a job's outcome")
		}
		if err := e.registry.SendText(ctx, j.Route, text); err != nil {
			log.Warn().Err(err).Msg("telling a chat about its job")
		}
	})
}

// Jobs lists the background jobs of chatKey ("" for all), newest first;
// nil without jobs, empty (not nil) when there are none yet.
func (e *Engine) Jobs(chatKey string) []jobs.Job {
	if e.jobs == nil {
		return nil
	}
	return append([]jobs.Job{}, e.jobs.List(chatKey)...)
}

// CancelJob stops a running job of chatKey ("" for any chat: the
// console) on behalf of by.
func (e *Engine) CancelJob(chatKey, id, by string) (jobs.Job, error) {
	if e.jobs == nil {
		return jobs.Job{}, ErrJobsOff
	}
	j, err := e.jobs.Cancel(chatKey, id, by)
	if err != nil {
		return j, fmt.Errorf("cancelling job %s: %w", id, err)
	}
	e.log.Info().Str("chatKey", j.ChatKey).Str("job", j.ID).Str("by", by).Msg("background job cancelled")
	return j, nil
}

// jobsText answers /jobs: chatKey's jobs with state and age.
func (e *Engine) jobsText(chatKey string) string {
	if e.jobs == nil {
		return "Background jobs are not enabled here."
	}
	list := e.jobs.List(chatKey)
	if len(list) == 0 {
		return "No background jobs in this chat."
	}
	now := time.Now()
	var b strings.Builder
	b.WriteString("Background jobs in this chat:")
	for i, j := range list {
		if i == 10 {
			fmt.Fprintf(&b, "\n… and %d older", len(list)-i)
			break
		}
		switch j.State {
		case jobs.Running:
			fmt.Fprintf(&b, "\n%s running for %s%s: %s", j.ID, now.Sub(j.Started).Round(time.Second), j.LeaseNote(now), j.Label)
		default:
			fmt.Fprintf(&b, "\n%s %s %s ago (exit %d%s): %s", j.ID, j.State, now.Sub(j.Ended).Round(time.Second), j.ExitCode, j.LeaseNote(now), j.Label)
		}
	}
	if slices.ContainsFunc(list, func(j jobs.Job) bool { return j.State == jobs.Running }) {
		b.WriteString("\n/cancel ID stops a running job.")
	}
	return b.String()
}

// mayCancel says whether who (an identity) may cancel job id of chatKey:
// the person who started it, or one whose role may approve tool calls.
// Another member stopping someone's build is what a role is for. An id the
// chat does not have is left for CancelJob to refuse.
func (e *Engine) mayCancel(chatKey, who, id string) bool {
	if e.jobs == nil {
		return true
	}
	for _, j := range e.jobs.List(chatKey) {
		if j.ID == jobs.NormID(id) {
			return j.Identity == who || e.gov.current().CanApprove(who)
		}
	}
	return true
}

// cancelCommand answers /cancel ID. The chat is told by the note the
// cancelled job sends when it has stopped, so a success has no reply.
func (e *Engine) cancelCommand(args string, req dispatch.RequestContext) string {
	return e.cancelAs(args, req.ChatKey, identity(req), who(req.Username, identity(req)))
}

// cancelAs answers /cancel ID in chatKey from the person whose identity is
// id and whose name the chat is told.
func (e *Engine) cancelAs(args, chatKey, ident, name string) string {
	// The id is read once, as the job manager reads it: checked in one
	// spelling and looked up in another ("J1\t" against "J1"), an id let
	// anyone cancel any job of the chat.
	words := strings.Fields(args)
	if len(words) == 0 {
		return "Usage: /cancel ID (the ids are in /jobs)."
	}
	id := jobs.NormID(words[0])
	if !e.mayCancel(chatKey, ident, id) {
		return fmt.Sprintf("Only whoever started job %s, or an approver, may cancel it.", strings.ToUpper(id))
	}
	_, err := e.CancelJob(chatKey, id, name)
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrJobsOff):
		return "Background jobs are not enabled here."
	case errors.Is(err, jobs.ErrUnknown):
		return fmt.Sprintf("There is no job %s in this chat.", strings.ToUpper(id))
	case errors.Is(err, jobs.ErrNotRunning):
		return fmt.Sprintf("Job %s is not running.", strings.ToUpper(id))
	}
	return "Cancelling the job failed; try again."
}

// JobsCommand answers /jobs and /cancel ID sent into an api chat (ship chat,
// /api/execute, /api/send) by the caller whose token proves identity: the
// same words and the same rule (the job's starter or an approver cancels)
// as in a platform chat, where the identity comes from the platform. ok is
// false when name is neither.
func (e *Engine) JobsCommand(name, args, chatKey, identity string) (reply string, ok bool) {
	switch strings.ToLower(name) {
	case "jobs":
		return e.jobsText(chatKey), true
	case "cancel":
		return e.cancelAs(args, chatKey, identity, policy.VisibleLine(identity)), true
	}
	return "", false
}
