package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/events"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/turn"
	"github.com/shipmyagent/ship/server/internal/throttle"
)

// retryAfterSeconds is what a refused client is told to wait: long enough
// for a few turns to drain, short enough that a retry loop stays responsive.
const retryAfterSeconds = "5"

// runKey names one api run: message ids are only unique within a chat.
type runKey struct{ chatKey, messageID string }

// collector gathers the replies one api run delivers while its HTTP request
// waits for the run to end.
type collector struct {
	replies []string
}

// runResult is what OnDone hands to the waiting request.
type runResult struct {
	outcome ingress.Outcome
	replies []string
}

type executeResponse struct {
	Success   bool            `json:"success"`
	Output    string          `json:"output"`
	ToolCalls []turn.ToolCall `json:"toolCalls"`
	Replies   []string        `json:"replies"`
	// Artifacts are the files the run sent (chat_send_file); each url
	// downloads it with the API's token (GET /api/files/…).
	Artifacts []turn.Artifact `json:"artifacts"`
	ChatKey   string          `json:"chatKey"`
	MessageID string          `json:"messageId"`
}

// handleExecute runs one turn in the api channel through the global queue
// and answers when the run has ended.
func (s *Server) handleExecute(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	log := zerolog.Ctx(ctx)

	in, ierr := s.readExecute(w, r)
	if ierr == nil {
		ierr = checkFraming(r) // before anything is queued
	}
	if ierr != nil {
		writeError(w, r, ierr.status, ierr.code, ierr.message)
		return
	}
	if s.executeCommand(w, r, in) { // /approve, /deny: commands.go
		return
	}
	if wantsStream(r) {
		// Taken before anything is queued: a refused stream runs nothing.
		release, ok := s.openStream(w, r)
		if !ok {
			return
		}
		defer release()
	}
	key := runKey{chatKey: in.chatKey, messageID: in.messageID}
	c, ok := s.register(key)
	if !ok {
		// Running it twice would answer the user twice; the first request
		// (or the run it left behind) still owns this message.
		writeError(w, r, http.StatusConflict, codeConflict,
			"messageId "+in.messageID+" is already being answered in this chat")
		return
	}

	done := make(chan runResult, 1) // buffered: OnDone must not block on a gone client
	taskID := requestID(ctx)
	var sub *events.Subscription
	if wantsStream(r) {
		// Subscribed before the run is queued, so no event is missed.
		sub, _ = s.opts.Door.Subscribe(func(e events.Event) bool { return e.TaskID == taskID }, 0, s.opts.SSEBuffer)
		defer sub.Close()
	}
	who := callerIdentity(ctx)
	_, err := s.opts.Door.Submit(ctx, ingress.Submission{
		ID:      taskID,
		Channel: chat.ChannelAPI,
		ChatKey: in.chatKey,
		Message: ingress.IncomingChatMessage{
			ChatID:    in.chatID,
			Text:      in.instructions,
			MessageID: in.messageID,
			UserID:    in.userID,
			ChatType:  chat.ChatTypeAPI,
		},
		Meta: identityMeta(who),
		// A retry of a message that was answered must not run it again:
		// that would answer the user twice.
		Once: in.clientMessageID,
		// The run acts as who the token proves, not as the body's userId
		// (a label); it is journaled, so a recovered run keeps it.
		Turn: turn.Turn{Identity: who, Tools: turn.Tools(in.tools), Model: in.llm},
		OnDone: func(o ingress.Outcome) {
			done <- runResult{outcome: o, replies: s.unregister(key, c)}
		},
		// The response is the acknowledgement: the message is durable
		// before it is sent, and shares its fsync with the reply.
		DeferSync: true,
	})
	if errors.Is(err, ingress.ErrDuplicate) {
		s.unregister(key, c)
		writeError(w, r, http.StatusConflict, codeConflict, "messageId "+in.messageID+
			" was already received in this chat; its replies are in GET /api/chats/"+in.chatKey+"/messages")
		return
	}
	if err != nil {
		s.unregister(key, c)
		s.writeAcceptError(w, r, err)
		return
	}

	if sub != nil {
		s.stream(w, r, sub, events.Event.Final, nil)
		return
	}
	var res runResult
	select {
	case res = <-done:
	case <-ctx.Done():
		// The run goes on: its replies are logged in the ChatStore, and the
		// collector stays until it ends so a retry of the same messageId is
		// refused instead of answered twice.
		log.Info().Str("chatKey", in.chatKey).Str("messageId", in.messageID).
			Msg("client went away before the run ended; the run continues")
		return
	}

	if ingress.IsStopped(res.outcome.Err) {
		// Shutdown came before this message's turn: it is in the chat log
		// but was not run, and the client should retry.
		s.writeAcceptError(w, r, res.outcome.Err)
		return
	}
	out := res.outcome.Result
	toolCalls := out.ToolCalls
	if toolCalls == nil {
		toolCalls = []turn.ToolCall{}
	}
	replies := res.replies
	if len(replies) == 0 {
		// The run went out on another replica (cluster mode), whose api
		// dispatcher had no collector: the run's result lists them.
		replies = out.Replies
	}
	if replies == nil {
		replies = []string{}
	}
	arts := out.Artifacts
	if arts == nil {
		arts = []turn.Artifact{}
	}
	writeJSON(w, r, http.StatusOK, executeResponse{
		Success:   out.Success,
		Output:    out.Output,
		ToolCalls: toolCalls,
		Replies:   replies,
		Artifacts: arts,
		ChatKey:   in.chatKey,
		MessageID: in.messageID,
	})
}

// writeAcceptError maps a refused submission to its answer. Only a busy
// queue is the client's business; anything else is logged and kept vague.
func (s *Server) writeAcceptError(w http.ResponseWriter, r *http.Request, err error) {
	var limited *ingress.RateLimitedError
	if writeBudgetError(w, r, err) {
		return
	}
	switch {
	case errors.As(err, &limited):
		secs := throttle.RetryAfter(max(limited.RetryAfter, time.Second))
		w.Header().Set("Retry-After", secs)
		writeError(w, r, http.StatusTooManyRequests, codeRateLimited,
			"too many messages from this sender in this chat; try again in "+secs+" s (nothing was recorded)")
	case ingress.IsStopped(err):
		w.Header().Set("Retry-After", retryAfterSeconds)
		writeError(w, r, http.StatusServiceUnavailable, codeShuttingDown,
			"the server is shutting down; try again shortly")
	case ingress.IsBusy(err):
		w.Header().Set("Retry-After", retryAfterSeconds)
		writeError(w, r, http.StatusServiceUnavailable, codeQueueFull,
			"the queue is full; try again shortly")
	default:
		zerolog.Ctx(r.Context()).Error().Err(err).Msg("accepting api message")
		writeError(w, r, http.StatusInternalServerError, codeInternal, msgInternal)
	}
}

// register adds a collector for key; ok is false when key is in flight.
func (s *Server) register(key runKey) (*collector, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, busy := s.inflight[key]; busy {
		return nil, false
	}
	c := &collector{}
	s.inflight[key] = c
	return c, true
}

// unregister removes c (if it is still key's collector) and returns what it
// collected.
func (s *Server) unregister(key runKey, c *collector) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight[key] == c {
		delete(s.inflight, key)
	}
	return c.replies
}

// sendText is the api channel's dispatcher: a reply "arrives" by being added
// to the collector of its run. A run whose collector is gone still counts
// as delivered, because chat.Deliver then logs the reply in the ChatStore,
// which is where a client that went away finds it.
func (s *Server) sendText(_ context.Context, req dispatch.RequestContext, text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.inflight[runKey{chatKey: req.ChatKey, messageID: req.MessageID}]; ok {
		c.replies = append(c.replies, text)
	}
	return nil
}

// wantsStream reports whether the client asked for the run's events as a
// server-sent event stream instead of one JSON answer.
func wantsStream(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}
