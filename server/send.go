package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/turn"
)

// sendRequest is the body of POST /api/send (see README: HTTP API).
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
	who := callerIdentity(r.Context())
	_, err := s.opts.Engine.Ingress().AcceptOnce(r.Context(), ingress.Submission{
		ID:      "t-" + randomHex(8),
		Channel: chat.ChannelAPI,
		ChatKey: in.chatKey,
		Message: ingress.IncomingChatMessage{ChatID: in.chatID, Text: in.instructions, MessageID: in.messageID, UserID: in.userID, ChatType: "api"},
		Meta:    identityMeta(who),
		// As in handleExecute: the token's identity, never the body's.
		Turn: turn.Turn{Identity: who, Tools: turn.Tools(in.tools), Model: in.llm},
	})
	status := "ok"
	switch {
	case errors.Is(err, ingress.ErrDuplicate):
		status = "duplicate"
	case err != nil:
		s.writeAcceptError(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, map[string]string{"status": status, "receivedMessageId": in.messageID})
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
