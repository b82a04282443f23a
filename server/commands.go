package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/turn"
)

// An approval asked in an api chat says "/approve CODE or /deny CODE", as on
// every platform, so the api chats take these two commands too: sent as the
// message of POST /api/execute or /api/send, they answer the approval
// through the engine's Decide with the rules of a chat (the approval must be
// of this chat; only the caller's token identity counts, never the body's
// userId, and it must be in a role that may approve, or be the asker for a
// denial). No turn is queued for the command itself. The same holds for
// /jobs and /cancel ID: a background job's note tells the person to use
// them, and ship chat is where an API user reads that note. Every other
// text, "/help" included, still goes to the agent as before.

// approvalCommand reads "/approve CODE" or "/deny CODE" (any case, the
// code as the first word after it); ok is false for any other text. Only
// the first two words are looked at: every message passes here.
func approvalCommand(text string) (code string, approve, ok bool) {
	verb, rest := firstWord(text)
	switch strings.ToLower(verb) {
	case "/approve":
		approve = true
	case "/deny":
	default:
		return "", false, false
	}
	code, _ = firstWord(rest)
	return code, approve, true
}

// firstWord splits s after its first word (white space around it dropped).
func firstWord(s string) (word, rest string) {
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	if i := strings.IndexFunc(s, unicode.IsSpace); i >= 0 {
		return s[:i], s[i:]
	}
	return s, ""
}

// decideCommand answers an approval command sent into the api chat of in.
// decided is false when nothing happened; reply says what happened or why
// not, in the words a chat gets.
func (s *Server) decideCommand(r *http.Request, in executeInput, code string, approve bool) (reply string, decided bool) {
	verb := "deny"
	if approve {
		verb = "approve"
	}
	if code == "" {
		return fmt.Sprintf("Usage: /%s CODE (the code is in the approval request).", verb), false
	}
	who := callerIdentity(r.Context())
	err := s.opts.Door.Decide(r.Context(), code, approve, engine.Decider{
		Identity: who, Name: who,
		// The command's own message: the approval must be of this chat,
		// and an approved call's turn answers this message.
		In: dispatch.RequestContext{Channel: chat.ChannelAPI, ChatKey: in.chatKey, ChatID: in.chatID,
			ChatType: chat.ChatTypeAPI, UserID: in.userID, MessageID: in.messageID},
	})
	var refused *engine.RefusalError
	switch {
	case err == nil && approve:
		return fmt.Sprintf("Approved %s: the call runs now; its result is answered in this chat "+
			"(GET /api/chats/%s/messages, or the event stream).", strings.ToUpper(code), in.chatKey), true
	case err == nil:
		return fmt.Sprintf("Denied %s: the call will not run.", strings.ToUpper(code)), true
	case errors.Is(err, engine.ErrApprovalsOff):
		return "Approvals are not enabled here.", false
	case errors.As(err, &refused):
		return refused.Text, false
	}
	return "Answering the approval failed; try again.", false
}

// apiCommand answers a command sent as the message of in: ok is false
// (nothing decided, nothing written) for any other text; decided says the
// command did what it asked.
func (s *Server) apiCommand(r *http.Request, in executeInput) (reply string, decided, ok bool) {
	if code, approve, ok := approvalCommand(in.instructions); ok {
		reply, decided = s.decideCommand(r, in, code, approve)
		return reply, decided, true
	}
	verb, rest := firstWord(in.instructions)
	name := strings.ToLower(strings.TrimPrefix(verb, "/"))
	if !strings.HasPrefix(verb, "/") || (name != "jobs" && name != "cancel") {
		return "", false, false
	}
	reply, ok = s.opts.Door.JobsCommand(name, rest, in.chatKey, callerIdentity(r.Context()))
	if !ok {
		return "", false, false
	}
	if reply == "" { // cancelled: the job's own note follows when it stops
		id, _ := firstWord(rest)
		return fmt.Sprintf("Cancelling job %s; this chat is told when it has stopped.", strings.ToUpper(id)), true, true
	}
	return reply, name == "jobs", true
}

// executeCommand answers /api/execute whose instructions are a command
// (/approve, /deny, /jobs, /cancel); ok is false (nothing written) for any
// other instructions.
func (s *Server) executeCommand(w http.ResponseWriter, r *http.Request, in executeInput) (ok bool) {
	reply, decided, ok := s.apiCommand(r, in)
	if !ok {
		return false
	}
	writeJSON(w, r, http.StatusOK, executeResponse{
		Success: decided, Output: reply, Replies: []string{reply},
		ToolCalls: []turn.ToolCall{}, Artifacts: []turn.Artifact{},
		ChatKey: in.chatKey, MessageID: in.messageID,
	})
	return true
}

// sendCommand answers /api/send whose message is a command: status "ok"
// when it was done, "refused" when not, with the reply.
func (s *Server) sendCommand(w http.ResponseWriter, r *http.Request, in executeInput) (ok bool) {
	reply, decided, ok := s.apiCommand(r, in)
	if !ok {
		return false
	}
	res := sendResponse{Status: "ok", ReceivedMessageID: in.messageID, Reply: reply}
	if !decided {
		res.Status = "refused"
	}
	writeJSON(w, r, http.StatusOK, res)
	return true
}
