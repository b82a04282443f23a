package fakelark

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// Keys of the reaction APIs, as FailNext and Calls name them.
const (
	PathReactionCreate = "POST /open-apis/im/v1/messages/:message_id/reactions"
	PathReactionList   = "GET /open-apis/im/v1/messages/:message_id/reactions"
	PathReactionDelete = "DELETE /open-apis/im/v1/messages/:message_id/reactions/:reaction_id"
)

// Reaction codes. Feishu's documentation names no codes for these cases;
// the client only needs a non-zero code with HTTP 400.
const (
	CodeReactionType = 231001 // "reaction type is invalid"
	CodeReactionGone = 231003 // no such reaction on the message
)

// reactionPageSize is the list API's default page size (20); small pages
// make clients page as they must against the real server.
const reactionPageSize = 20

// Reaction is an emoji reaction on a message.
type Reaction struct {
	ReactionID   string
	MessageID    string
	EmojiType    string // e.g. "Typing", "THUMBSUP"
	OperatorType string // "app" or "user"
	OperatorID   string // the app id for "app", the open_id for "user"
	At           time.Time
	Removed      time.Time // ReactionHistory: when it was deleted (zero: still on)
}

// Reactions returns the reactions now on messageID, oldest first.
func (s *Server) Reactions(messageID string) []Reaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.edits.reactions[messageID])
}

// ReactionHistory returns every reaction ever put on messageID, in the
// order they were added, the deleted ones with the time they went.
func (s *Server) ReactionHistory(messageID string) []Reaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Reaction
	for _, r := range s.edits.history {
		if r.MessageID == messageID {
			out = append(out, r)
		}
	}
	return out
}

// WaitReactions returns the reactions on messageID once cond holds for
// them. On ctx expiry (or Close) it returns them as they are, with the error.
func (s *Server) WaitReactions(ctx context.Context, messageID string, cond func([]Reaction) bool) ([]Reaction, error) {
	err := s.waitChange(ctx, func() bool { return cond(s.edits.reactions[messageID]) })
	return s.Reactions(messageID), err
}

// React puts a reaction on messageID as someone else would (a user, or the
// app in an earlier life), and returns its id.
func (s *Server) React(messageID, emojiType, operatorType, operatorID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reactLocked(messageID, emojiType, operatorType, operatorID).ReactionID
}

// reactLocked adds a reaction; one operator has at most one reaction of a
// type on a message, as in the client, so adding it again returns the one
// there. The caller holds s.mu.
func (s *Server) reactLocked(messageID, emojiType, operatorType, operatorID string) Reaction {
	for _, r := range s.edits.reactions[messageID] {
		if r.EmojiType == emojiType && r.OperatorType == operatorType && r.OperatorID == operatorID {
			return r
		}
	}
	r := Reaction{
		ReactionID: fmt.Sprintf("rc_%d", s.nextLocked()), MessageID: messageID, EmojiType: emojiType,
		OperatorType: operatorType, OperatorID: operatorID, At: time.Now(),
	}
	if s.edits.reactions == nil {
		s.edits.reactions = map[string][]Reaction{}
	}
	s.edits.reactions[messageID] = append(s.edits.reactions[messageID], r)
	s.edits.history = append(s.edits.history, r)
	s.noteChangeLocked()
	return r
}

func reactionJSON(r Reaction) map[string]any {
	return map[string]any{
		"reaction_id":   r.ReactionID,
		"operator":      map[string]any{"operator_id": r.OperatorID, "operator_type": r.OperatorType},
		"action_time":   millis(r.At),
		"reaction_type": map[string]any{"emoji_type": r.EmojiType},
	}
}

// knownLocked reports whether messageID is a message the fake knows and
// that is not deleted; the caller holds s.mu.
func (s *Server) knownLocked(messageID string) bool {
	if s.edits.deleted[messageID] {
		return false
	}
	if _, ok := s.messages[messageID]; ok {
		return true
	}
	_, ok := s.sentLocked(messageID)
	return ok
}

// createReaction is POST /open-apis/im/v1/messages/{message_id}/reactions,
// by the app.
func (s *Server) createReaction(w http.ResponseWriter, r *http.Request) {
	if s.failedEdit(w, PathReactionCreate) || !s.authorized(w, r) {
		return
	}
	var b struct {
		ReactionType struct {
			EmojiType string `json:"emoji_type"`
		} `json:"reaction_type"`
	}
	if _, err := readJSON(r, 1<<20, &b); err != nil || b.ReactionType.EmojiType == "" {
		writeJSON(w, http.StatusBadRequest, codeMsg(CodeReactionType, "reaction type is invalid"))
		return
	}
	id := r.PathValue("message_id")
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.knownLocked(id) {
		writeJSON(w, http.StatusBadRequest, codeMsg(CodeMessageGone, "The message is recalled."))
		return
	}
	re := s.reactLocked(id, b.ReactionType.EmojiType, "app", s.opts.AppID)
	writeJSON(w, http.StatusOK, map[string]any{"code": 0, "msg": "success", "data": reactionJSON(re)})
}

// listReactions is GET /open-apis/im/v1/messages/{message_id}/reactions,
// filtered by reaction_type and paged by page_token/page_size.
func (s *Server) listReactions(w http.ResponseWriter, r *http.Request) {
	if s.failedEdit(w, PathReactionList) || !s.authorized(w, r) {
		return
	}
	q := r.URL.Query()
	size := reactionPageSize
	if v := q.Get("page_size"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 50 {
			writeJSON(w, http.StatusBadRequest, codeMsg(99992402, "field validation failed: page_size"))
			return
		}
		size = n
	}
	start := 0
	if v := q.Get("page_token"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeJSON(w, http.StatusBadRequest, codeMsg(99992402, "field validation failed: page_token"))
			return
		}
		start = n
	}
	id := r.PathValue("message_id")
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.knownLocked(id) {
		writeJSON(w, http.StatusBadRequest, codeMsg(CodeMessageGone, "The message is recalled."))
		return
	}
	var match []Reaction
	for _, re := range s.edits.reactions[id] {
		if t := q.Get("reaction_type"); t == "" || re.EmojiType == t {
			match = append(match, re)
		}
	}
	items := []any{}
	end := min(start+size, len(match))
	for i := start; i < end; i++ {
		items = append(items, reactionJSON(match[i]))
	}
	data := map[string]any{"items": items, "has_more": end < len(match)}
	if end < len(match) {
		data["page_token"] = strconv.Itoa(end)
	}
	writeJSON(w, http.StatusOK, map[string]any{"code": 0, "msg": "success", "data": data})
}

// deleteReaction is DELETE
// /open-apis/im/v1/messages/{message_id}/reactions/{reaction_id}: the app
// may delete only its own reactions.
func (s *Server) deleteReaction(w http.ResponseWriter, r *http.Request) {
	if s.failedEdit(w, PathReactionDelete) || !s.authorized(w, r) {
		return
	}
	id, rid := r.PathValue("message_id"), r.PathValue("reaction_id")
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.edits.reactions[id]
	i := slices.IndexFunc(list, func(re Reaction) bool { return re.ReactionID == rid })
	if i < 0 {
		writeJSON(w, http.StatusBadRequest, codeMsg(CodeReactionGone, "reaction not found"))
		return
	}
	re := list[i]
	if re.OperatorType != "app" || re.OperatorID != s.opts.AppID {
		writeJSON(w, http.StatusBadRequest, codeMsg(CodeReactionGone, "only the operator can delete a reaction"))
		return
	}
	s.edits.reactions[id] = slices.Delete(slices.Clone(list), i, i+1)
	for h := range s.edits.history {
		if s.edits.history[h].ReactionID == rid {
			s.edits.history[h].Removed = time.Now()
		}
	}
	s.noteChangeLocked()
	writeJSON(w, http.StatusOK, map[string]any{"code": 0, "msg": "success", "data": reactionJSON(re)})
}
