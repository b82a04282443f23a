package fakelark

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// Keys of the message edit APIs, as FailNext and Calls name them. The update
// and the delete share a URL, so the method is part of the key.
const (
	PathUpdate = "PATCH /open-apis/im/v1/messages/:message_id"
	PathDelete = "DELETE /open-apis/im/v1/messages/:message_id"
)

// More Feishu error codes the edit APIs answer with.
const (
	CodeMessageGone = 230011 // the message was recalled (deleted) or is unknown
	// CodeNotCard: only interactive messages can be updated with PATCH.
	CodeNotCard = 230001
	// MaxCardBytes is the largest card an update takes (30 KB).
	MaxCardBytes = 30 << 10
)

// Update is one accepted PATCH of a message: the card it shows from then on.
type Update struct {
	MessageID string
	Content   string // the card JSON as sent
	Text      string // the card's text (CardText)
	At        time.Time
}

// Shown is a message of the bot as a user sees it now.
type Shown struct {
	MessageID string
	ChatID    string
	ThreadID  string
	ReplyTo   string
	MsgType   string
	Content   string // the content now: the last update, or as sent
	Text      string // text messages: the text; cards: CardText
	Updates   int    // how many times it was updated in place
}

// editState is what the edit and reaction APIs keep; guarded by Server.mu.
type editState struct {
	updates   []Update
	deleted   map[string]bool
	order     []string              // deleted ids, in the order deleted
	reactions map[string][]Reaction // message id → reactions now on it
	history   []Reaction            // every reaction added, Removed set once deleted
	changed   chan struct{}         // closed and replaced on every edit or reaction change
}

// changedLocked returns the channel the next change closes; the caller holds s.mu.
func (s *Server) changedLocked() chan struct{} {
	if s.edits.changed == nil {
		s.edits.changed = make(chan struct{})
	}
	return s.edits.changed
}

// noteChangeLocked wakes the waiters; the caller holds s.mu.
func (s *Server) noteChangeLocked() {
	if s.edits.changed != nil {
		broadcast(&s.edits.changed)
	}
}

// waitChange calls cond under s.mu until it returns true, waking on every
// edit or reaction change.
func (s *Server) waitChange(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		if cond() {
			s.mu.Unlock()
			return nil
		}
		ch := s.changedLocked()
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return ErrClosed
		}
	}
}

// Know makes the fake learn a user's message without delivering it, for
// tests that call the bot's side directly: replies to it and reactions on
// it then find it.
func (s *Server) Know(ev Event) { s.remember(ev.MessageID, ev.info()) }

// CardText returns the text a card shows a reader (RenderCard): its text
// elements and markdown, Markdown drawn, joined by newlines. It reads card
// JSON 1.0 ("elements") and 2.0 ("body.elements").
func CardText(content string) string { return RenderCard(content).Text }

// cardUpdatable reports whether content is card JSON that declares
// config.update_multi true, which Feishu requires of a card before and after
// an update.
func cardUpdatable(content string) bool {
	var card struct {
		Schema string `json:"schema"`
		Config struct {
			UpdateMulti *bool `json:"update_multi"`
		} `json:"config"`
	}
	if json.Unmarshal([]byte(content), &card) != nil {
		return false
	}
	if card.Config.UpdateMulti == nil {
		return card.Schema == "2.0" // JSON 2.0 cards are shared by default
	}
	return *card.Config.UpdateMulti
}

// sentLocked returns the recorded send of messageID; the caller holds s.mu.
func (s *Server) sentLocked(messageID string) (Sent, bool) {
	for _, m := range s.sent {
		if m.MessageID == messageID {
			return m, true
		}
	}
	return Sent{}, false
}

// shownLocked is messageID as a user sees it; the caller holds s.mu.
func (s *Server) shownLocked(m Sent) Shown {
	sh := Shown{MessageID: m.MessageID, ChatID: m.ChatID, ThreadID: m.ThreadID, ReplyTo: m.ReplyTo,
		MsgType: m.MsgType, Content: m.Content, Text: m.Text}
	for _, u := range s.edits.updates {
		if u.MessageID == m.MessageID {
			sh.Content = u.Content
			sh.Updates++
		}
	}
	if sh.MsgType == "interactive" {
		sh.Text = CardText(sh.Content)
	}
	return sh
}

// Chat returns the bot's messages in chatID that are not deleted, as they
// look now, oldest first.
func (s *Server) Chat(chatID string) []Shown {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Shown
	for _, m := range s.sent {
		if m.ChatID == chatID && !s.edits.deleted[m.MessageID] {
			out = append(out, s.shownLocked(m))
		}
	}
	return out
}

// Updates returns every accepted update of messageID ("" → of every
// message), oldest first.
func (s *Server) Updates(messageID string) []Update {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.updatesLocked(messageID)
}

func (s *Server) updatesLocked(messageID string) []Update {
	var out []Update
	for _, u := range s.edits.updates {
		if messageID == "" || u.MessageID == messageID {
			out = append(out, u)
		}
	}
	return out
}

// WaitUpdates returns once messageID ("" → any message) has at least n
// accepted updates. On ctx expiry (or Close) it returns what there is with
// ctx.Err() (or ErrClosed).
func (s *Server) WaitUpdates(ctx context.Context, messageID string, n int) ([]Update, error) {
	var out []Update
	err := s.waitChange(ctx, func() bool {
		out = s.updatesLocked(messageID)
		return len(out) >= n
	})
	if err != nil {
		return s.Updates(messageID), err
	}
	return out, nil
}

// Deleted returns the ids of the messages the bot deleted, in order.
func (s *Server) Deleted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.edits.order)
}

// WaitDeleted returns once messageID is deleted.
func (s *Server) WaitDeleted(ctx context.Context, messageID string) error {
	return s.waitChange(ctx, func() bool { return s.edits.deleted[messageID] })
}

// failedEdit answers an injected failure of key, if one is due. A
// platform-wide rate limit (HTTP 429) carries the reset header the real
// gateway sends.
func (s *Server) failedEdit(w http.ResponseWriter, key string) bool {
	f, ok := s.count(key)
	if !ok {
		return false
	}
	if f.Status == 0 {
		f.Status = http.StatusBadRequest
	}
	if f.Status == http.StatusTooManyRequests {
		w.Header().Set("X-Ogw-Ratelimit-Limit", "5")
		w.Header().Set("X-Ogw-Ratelimit-Reset", "1")
	}
	writeJSON(w, f.Status, codeMsg(f.Code, f.Msg))
	return true
}

// updateMessage is PATCH /open-apis/im/v1/messages/{message_id}: a card sent
// by the bot shows new content. The real limits apply: only interactive
// messages, update_multi declared before and after, 30 KB.
func (s *Server) updateMessage(w http.ResponseWriter, r *http.Request) {
	if s.failedEdit(w, PathUpdate) || !s.authorized(w, r) {
		return
	}
	var b struct {
		Content string `json:"content"`
	}
	if tooLong, err := readJSON(r, MaxBodyBytes, &b); tooLong || len(b.Content) > MaxCardBytes {
		writeJSON(w, http.StatusBadRequest, codeMsg(CodeTooLong, "The message body exceeds the size limit."))
		return
	} else if err != nil || b.Content == "" || !json.Valid([]byte(b.Content)) {
		writeJSON(w, http.StatusBadRequest, codeMsg(CodeBadRequest, "invalid content"))
		return
	}
	if err := validateCard(b.Content); err != nil {
		writeJSON(w, http.StatusBadRequest, codeMsg(CodeBadCard, err.Error()))
		return
	}
	id := r.PathValue("message_id")
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.sentLocked(id)
	if !ok || s.edits.deleted[id] {
		writeJSON(w, http.StatusBadRequest, codeMsg(CodeMessageGone, "The message is recalled."))
		return
	}
	if m.MsgType != "interactive" {
		writeJSON(w, http.StatusBadRequest, codeMsg(CodeNotCard, "only interactive messages can be updated"))
		return
	}
	if !cardUpdatable(s.shownLocked(m).Content) || !cardUpdatable(b.Content) {
		writeJSON(w, http.StatusBadRequest, codeMsg(CodeBadRequest, "card config update_multi must be true"))
		return
	}
	s.edits.updates = append(s.edits.updates, Update{MessageID: id, Content: b.Content, Text: CardText(b.Content), At: time.Now()})
	s.noteChangeLocked()
	writeJSON(w, http.StatusOK, map[string]any{"code": 0, "msg": "success", "data": map[string]any{}})
}

// deleteMessage is DELETE /open-apis/im/v1/messages/{message_id}: the bot
// recalls a message it sent.
func (s *Server) deleteMessage(w http.ResponseWriter, r *http.Request) {
	if s.failedEdit(w, PathDelete) || !s.authorized(w, r) {
		return
	}
	id := r.PathValue("message_id")
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.sentLocked(id); !ok || s.edits.deleted[id] {
		writeJSON(w, http.StatusBadRequest, codeMsg(CodeMessageGone, "The message is recalled."))
		return
	}
	if s.edits.deleted == nil {
		s.edits.deleted = map[string]bool{}
	}
	s.edits.deleted[id] = true
	s.edits.order = append(s.edits.order, id)
	s.noteChangeLocked()
	writeJSON(w, http.StatusOK, map[string]any{"code": 0, "msg": "success", "data": map[string]any{}})
}

// routesEdits registers the edit and reaction APIs.
func (s *Server) routesEdits(mux *http.ServeMux) {
	mux.HandleFunc("PATCH /open-apis/im/v1/messages/{message_id}", s.updateMessage)
	mux.HandleFunc("DELETE /open-apis/im/v1/messages/{message_id}", s.deleteMessage)
	mux.HandleFunc("POST /open-apis/im/v1/messages/{message_id}/reactions", s.createReaction)
	mux.HandleFunc("GET /open-apis/im/v1/messages/{message_id}/reactions", s.listReactions)
	mux.HandleFunc("DELETE /open-apis/im/v1/messages/{message_id}/reactions/{reaction_id}", s.deleteReaction)
}

// millis renders t as the API's millisecond timestamps.
func millis(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

// Wait returns once cond holds. cond is called without the fake's lock (it
// may call Chat, Updates, Reactions…), first at once and then after every
// recorded send, update, deletion and reaction change. On ctx expiry (or
// Close) it returns ctx.Err() (or ErrClosed).
func (s *Server) Wait(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		sent, changed := s.sentCh, s.changedLocked()
		s.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-sent:
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return ErrClosed
		}
	}
}
