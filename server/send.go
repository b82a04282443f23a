package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/turn"
)

// sendRequest is the body of POST /api/send (see docs/api.md).
type sendRequest struct {
	UserMessageID  *string    `json:"userMessageId"`
	Message        *string    `json:"message"`
	ChatID         *string    `json:"chatId"`
	UserID         *string    `json:"userId"`
	LLMConfig      *llmConfig `json:"llmConfig"`
	RelatedTaskIDs []string   `json:"relatedTaskIds"`
	// Tools narrows the tool policy for this run (see executeRequest).
	Tools json.RawMessage `json:"tools"`
}

// handleSend takes a message and answers at once; the run's events arrive
// on the SSE streams. userMessageId makes it idempotent: the same id again
// (also after a restart) is "duplicate" and runs nothing. A rejected
// request does not use up its id.
func (s *Server) handleSend(w http.ResponseWriter, r *http.Request) {
	body, ierr := s.readBody(w, r)
	if ierr != nil {
		writeError(w, r, ierr.status, ierr.code, ierr.message)
		return
	}
	var req sendRequest
	if ierr := decodeStrict(body, &req); ierr != nil {
		writeError(w, r, ierr.status, ierr.code, ierr.message)
		return
	}
	in, ierr := s.validateSend(req)
	if ierr != nil {
		writeError(w, r, ierr.status, ierr.code, ierr.message)
		return
	}
	if s.sendCommand(w, r, in) {
		return
	}
	who := callerIdentity(r.Context())
	taskID := "t-" + randomHex(8)
	meta := identityMeta(who)
	// Kept with the message, so that a repeated send can name the run the
	// first one started (duplicateTaskID).
	meta[metaTaskID] = taskID
	_, err := s.opts.Door.Submit(r.Context(), ingress.Submission{
		ID:      taskID,
		Channel: chat.ChannelAPI,
		ChatKey: in.chatKey,
		Message: ingress.IncomingChatMessage{ChatID: in.chatID, Text: in.instructions, MessageID: in.messageID, UserID: in.userID, ChatType: chat.ChatTypeAPI},
		Meta:    meta,
		// The same userMessageId again is a duplicate and runs nothing.
		Once: true,
		// As in handleExecute: the token's identity, never the body's.
		Turn: turn.Turn{Identity: who, Tools: turn.Tools(in.tools), Model: in.llm},
	})
	res := sendResponse{Status: "ok", ReceivedMessageID: in.messageID, TaskID: taskID}
	switch {
	case errors.Is(err, ingress.ErrDuplicate):
		res.Status, res.TaskID = "duplicate", s.duplicateTaskID(r.Context(), in.chatKey, in.messageID)
	case err != nil:
		s.writeAcceptError(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, res)
}

// sendResponse is the answer of POST /api/send: seed 003's status and
// receivedMessageId, and seed 000's taskId, the run whose events follow on
// /api/sse/{taskId}. A duplicate names the run of the first send when the
// chat log still has it (the last sendLookBack entries of the chat), and
// has no taskId otherwise.
type sendResponse struct {
	Status            string `json:"status"`
	ReceivedMessageID string `json:"receivedMessageId"`
	TaskID            string `json:"taskId,omitempty"`
	// Reply answers a command (/approve CODE, /deny CODE: commands.go),
	// which starts no run of its own.
	Reply string `json:"reply,omitempty"`
}

// metaTaskID is the meta key of an /api/send message's run id in its chat
// log entry.
const metaTaskID = "taskId"

// sendLookBack is how far back in a chat's log a duplicate's first send is
// looked for: a repeated send is a client's retry, soon after the first.
const sendLookBack = 200

// duplicateTaskID returns the run id the first send of messageID in
// chatKey was given, or "" when the log no longer shows it (or it came
// from before sends kept one).
func (s *Server) duplicateTaskID(ctx context.Context, chatKey, messageID string) string {
	recent, err := s.opts.View.Recent(ctx, chatKey, sendLookBack)
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("reading the chat log for a repeated send's run")
		return ""
	}
	for i := len(recent) - 1; i >= 0; i-- {
		if e := recent[i]; e.Role == chat.RoleUser && e.MessageID == messageID {
			id, _ := e.Meta[metaTaskID].(string)
			return id
		}
	}
	return ""
}

func (s *Server) validateSend(req sendRequest) (executeInput, *inputError) {
	if req.UserMessageID == nil || strings.TrimSpace(*req.UserMessageID) == "" {
		return executeInput{}, invalid("userMessageId is required and must be a non-empty string")
	}
	if ierr := checkID("userMessageId", *req.UserMessageID); ierr != nil {
		return executeInput{}, ierr
	}
	if req.Message == nil || strings.TrimSpace(*req.Message) == "" {
		return executeInput{}, invalid("message is required and must be a non-empty string")
	}
	if n := utf8.RuneCountInString(*req.Message); n > s.opts.MaxInstructionChars {
		return executeInput{}, invalid("message is %d characters, over the limit of %d", n, s.opts.MaxInstructionChars)
	}
	over, ierr := s.checkLLMConfig(req.LLMConfig)
	if ierr != nil {
		return executeInput{}, ierr
	}
	for _, id := range req.RelatedTaskIDs {
		if ierr := checkID("relatedTaskIds", id); ierr != nil {
			return executeInput{}, ierr
		}
	}
	in, ierr := validateExecute(executeRequest{Instructions: req.Message, ChatID: req.ChatID, UserID: req.UserID, MessageID: req.UserMessageID, Tools: req.Tools}, s.opts.MaxInstructionChars)
	in.llm = over
	return in, ierr
}
