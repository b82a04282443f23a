package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/queue"
	"github.com/shipmyagent/ship/runtime/turn"
)

// IdentityPrefix starts the identity a task's run acts for in the tool
// policy: "scheduler:<name>".
const IdentityPrefix = chat.ChannelScheduler + ":"

// fire takes slot of task t and queues its run. The slot is recorded
// before the run is queued: a crash in between loses that slot's run, but
// a slot never runs twice (once queued, the journal carries the run).
func (s *Scheduler) fire(ctx context.Context, t Task, slot, now time.Time) {
	id := fmt.Sprintf("task-%s-%d", t.Name, slot.Unix())
	log := s.log.With().Str("task", t.Name).Str("chatKey", t.ChatKey).Str("requestId", id).Time("slot", slot).Logger()
	route, rerr := s.route(ctx, t.ChatKey)
	if rerr != nil && !errors.Is(rerr, ErrUnknownChat) {
		log.Error().Err(rerr).Msg("scheduled task: finding its chat; trying again at the next pass")
		return
	}
	ts := TaskState{LastSlot: slot, LastRun: now, LastRunID: id, LastStatus: StatusStarted, LastResult: "started"}
	if rerr != nil {
		ts.LastRunID, ts.LastStatus, ts.LastResult, ts.LastEnded = "", StatusSkipped, rerr.Error(), now
	}
	// LastSlot only moves forward: a slot at or before it was taken by
	// another pass, or in cluster mode by another replica's scheduler
	// (two may hold the lease for a moment while it moves).
	took, err := s.update(ctx, t.Name, func(old TaskState, _ bool) (TaskState, bool) {
		return ts, slot.After(old.LastSlot)
	})
	if err != nil {
		log.Error().Err(err).Msg("scheduled task: recording its slot; not run, trying again at the next pass")
		return
	}
	if !took {
		log.Debug().Msg("scheduled task: slot taken meanwhile by another pass or replica")
		return
	}
	if rerr != nil {
		log.Warn().Err(rerr).Msg("scheduled task not run: nowhere to send its results")
		return
	}
	// Once the slot is taken the run must be queued, even if ship is
	// stopping: the engine closes only after the scheduler has stopped.
	if err := s.submit(context.WithoutCancel(ctx), t, route, id, false); err != nil {
		log.Error().Err(err).Msg("scheduled task not run")
		return
	}
	log.Info().Str("channel", route.Channel).Msg("scheduled task queued")
}

// RunNow queues a run of task name now, outside its schedule (it need not
// be enabled), and returns the run's id: its taskId on the event stream.
// Errors wrap ErrNotFound, ErrInvalid or ErrUnknownChat, or the queue's
// refusal (ingress.IsBusy).
func (s *Scheduler) RunNow(ctx context.Context, name string) (string, error) {
	e, err := s.folder.Get(name)
	if err != nil {
		return "", err
	}
	if e.Err != nil {
		return "", fmt.Errorf("task %s: %w", name, e.Err)
	}
	t := e.Task
	now := s.clock.Now()
	id := fmt.Sprintf("task-%s-run-%d-%d", name, now.UnixMilli(), s.runs.Add(1))
	log := s.log.With().Str("task", name).Str("chatKey", t.ChatKey).Str("requestId", id).Logger()
	route, err := s.route(ctx, t.ChatKey)
	if err != nil {
		return "", err
	}
	if s.shared == nil {
		s.mu.Lock()
		err := s.loadLocked(now)
		s.mu.Unlock()
		if err != nil {
			return "", err
		}
	}
	_, err = s.update(ctx, name, func(ts TaskState, _ bool) (TaskState, bool) {
		ts.LastRun, ts.LastRunID, ts.LastStatus, ts.LastResult, ts.LastEnded = now, id, StatusStarted, "started by hand", time.Time{}
		return ts, true
	})
	if err != nil {
		log.Error().Err(err).Msg("task run by hand: recording it")
	}
	if err := s.submit(context.WithoutCancel(ctx), t, route, id, true); err != nil {
		return "", err
	}
	log.Info().Str("channel", route.Channel).Msg("task run by hand queued")
	return id, nil
}

// submit queues run id of t; a refusal is recorded as its result.
func (s *Scheduler) submit(ctx context.Context, t Task, route dispatch.RequestContext, id string, byHand bool) error {
	head := "[scheduled task " + t.Name + "]"
	meta := map[string]any{"task": t.Name}
	// The task folder is <project>/.ship/tasks.
	check, err := t.outputCheck(filepath.Dir(filepath.Dir(s.folder.Dir)))
	if err != nil {
		s.ended(t.Name, id, StatusFailed, "not run: "+err.Error())
		return err
	}
	if byHand {
		head = "[scheduled task " + t.Name + ", run by hand]"
		meta["byHand"] = true
	}
	_, err = s.sub.Submit(ctx, ingress.Submission{
		ID:      id,
		Channel: chat.ChannelScheduler,
		ChatKey: t.ChatKey,
		Message: ingress.IncomingChatMessage{
			ChatID: route.ChatID, ChatType: route.ChatType, MessageThreadID: route.MessageThreadID, ThreadID: route.ThreadID,
			MessageID: id, UserID: t.Name, Text: head + "\n" + t.Instruction,
		},
		Meta: meta,
		Turn: turn.Turn{Route: route, Identity: IdentityPrefix + t.Name, Output: check},
		// ship's own schedule, not someone who could flood.
		Unlimited: true,
		OnDone: func(o ingress.Outcome) {
			status, result := summarize(o, route, s.replyWindowHint(route))
			s.ended(t.Name, id, status, result)
		},
	})
	if err != nil {
		s.ended(t.Name, id, StatusSkipped, "not run: "+err.Error())
		return fmt.Errorf("queueing task %s: %w", t.Name, err)
	}
	return nil
}

// routeLookBack is how many of a chat's latest entries are searched for
// its latest message before the whole log is.
const routeLookBack = 500

// route is where a run for chatKey replies: the api channel for API chats,
// else the chat, topic or thread of the latest message the chat sent, the
// way its platform routes a post ship makes on its own (taskRoute).
func (s *Scheduler) route(ctx context.Context, chatKey string) (dispatch.RequestContext, error) {
	if id, ok := chat.APIChatID(chatKey); ok {
		return dispatch.RequestContext{Channel: chat.ChannelAPI, ChatID: id, ChatKey: chatKey, ChatType: "api"}, nil
	}
	recent, err := s.hist.Recent(ctx, chatKey, routeLookBack)
	if err != nil {
		return dispatch.RequestContext{}, fmt.Errorf("reading chat %s: %w", chatKey, err)
	}
	for i := len(recent) - 1; i >= 0; i-- {
		if r, ok := routeFrom(recent[i]); ok {
			return s.taskRoute(r), nil
		}
	}
	if len(recent) == routeLookBack {
		// A chat where only tasks spoke lately: its older log has the route.
		var found *dispatch.RequestContext
		err := s.hist.Scan(ctx, chatKey, func(e chat.ChatLogEntryV1) bool {
			if r, ok := routeFrom(e); ok {
				found = &r
			}
			return true
		})
		if err != nil {
			return dispatch.RequestContext{}, fmt.Errorf("reading chat %s: %w", chatKey, err)
		}
		if found != nil {
			return s.taskRoute(*found), nil
		}
	}
	return dispatch.RequestContext{}, fmt.Errorf("chat %s unknown: %w", chatKey, ErrUnknownChat)
}

// routeFrom is the route of a message a person sent in the chat, the
// message's id included: whether a task's reply answers it is the
// platform's to say (taskRoute).
func routeFrom(e chat.ChatLogEntryV1) (dispatch.RequestContext, bool) {
	if e.Role != chat.RoleUser || e.Channel == "" || e.Channel == chat.ChannelScheduler || e.Meta["restored"] == true {
		return dispatch.RequestContext{}, false
	}
	return dispatch.RequestContext{
		Channel: e.Channel, ChatID: e.ChatID, ChatKey: e.ChatKey, MessageID: e.MessageID,
		ChatType: metaString(e.Meta, "chatType"), MessageThreadID: metaInt(e.Meta, "messageThreadId"), ThreadID: metaString(e.Meta, "threadId"),
	}, true
}

// taskRoute is how a run's replies reach the chat whose latest message came
// by last. A reply is a new message in the chat, topic or thread, not a
// reply to that message, unless the chat's platform needs one (it is a
// dispatch.TaskRouter): some take a bot's message only as a reply to a
// person's recent one, or reach a thread only by a reply in it.
func (s *Scheduler) taskRoute(last dispatch.RequestContext) dispatch.RequestContext {
	d, _ := s.disp.Lookup(last.Channel)
	return dispatch.TaskRoute(d, last)
}

// replyWindowHint is the rule of route's platform for when it takes a
// bot's message ("" where there is none): a refused reply's result says it.
func (s *Scheduler) replyWindowHint(route dispatch.RequestContext) string {
	d, _ := s.disp.Lookup(route.Channel)
	return dispatch.ReplyWindowHint(d, route)
}

func metaString(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

// metaInt reads a number from an entry's meta: JSON numbers decode as
// float64.
func metaInt(m map[string]any, k string) int64 {
	switch v := m[k].(type) {
	case float64:
		return int64(v)
	case int64:
		return v
	case int:
		return int64(v)
	case json.Number:
		n, _ := v.Int64()
		return n
	}
	return 0
}

// summarize says how a run ended, in one line for listings. hint is the
// reply window of route's platform, added when the reply was refused.
func summarize(o ingress.Outcome, route dispatch.RequestContext, hint string) (status, result string) {
	switch {
	case errors.Is(o.Err, queue.ErrQueueStopped):
		return StatusInterrupted, "ship stopped before the run began; it runs at the next start"
	case errors.Is(o.Err, context.Canceled):
		return StatusInterrupted, "ship stopped during the run; at the next start it runs again unless its reply had begun"
	case o.Err != nil:
		return StatusFailed, "failed: " + clip(o.Err.Error(), 300)
	}
	sent, refusal := 0, ""
	for _, c := range o.Result.ToolCalls {
		if c.Tool != dispatch.ChatSendTool {
			continue
		}
		var out struct {
			Success bool   `json:"success"`
			Error   string `json:"error"`
		}
		if json.Unmarshal([]byte(c.Output), &out) == nil && out.Success {
			sent++
		} else if out.Error != "" {
			refusal = out.Error
		}
	}
	switch {
	case refusal != "" && sent == 0 && !o.FallbackSent:
		msg := "the reply did not reach the chat: " + clip(refusal, 300)
		if hint != "" {
			msg += " (" + hint + ")"
		}
		return StatusFailed, msg
	case sent > 0:
		return StatusOK, fmt.Sprintf("replied in %s (%d message%s)", route.ChatKey, sent, plural(sent))
	case o.FallbackSent:
		return StatusOK, "replied in " + route.ChatKey
	}
	return StatusOK, "ran; sent nothing to the chat"
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
