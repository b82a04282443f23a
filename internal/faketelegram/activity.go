package faketelegram

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"
)

// ChatAction records one successful sendChatAction call.
type ChatAction struct {
	ChatID   int64     // the resolved chat_id
	ThreadID int64     // message_thread_id, 0 when absent
	Action   string    // action as sent, e.g. "typing"
	At       time.Time // when it arrived (count actions; do not assert timings)
}

// Draft records one successful sendMessageDraft call. A draft is an
// ephemeral preview: it is not a message and is not in Sent.
type Draft struct {
	ChatID    int64             // the resolved chat_id (a private chat)
	ThreadID  int64             // message_thread_id, 0 when absent
	DraftID   int64             // draft_id (non-zero)
	Text      string            // text exactly as sent, markup included
	ParseMode string            // parse_mode as sent
	Params    map[string]string // every parameter as received (do not modify)
	At        time.Time         // when the call was answered
}

// chatActions are the actions sendChatAction accepts (case-insensitive), the
// legacy aliases of the real server included.
var chatActions = map[string]bool{"typing": true, "upload_photo": true, "record_video": true,
	"upload_video": true, "record_voice": true, "upload_voice": true, "record_audio": true, "upload_audio": true,
	"upload_document": true, "choose_sticker": true, "find_location": true, "pick_up_location": true,
	"record_video_note": true, "upload_video_note": true}

func (s *Server) sendChatAction(rq *request) (any, *apiError) {
	action := rq.p["action"]
	if !chatActions[strings.ToLower(strings.TrimSpace(action))] {
		return nil, badRequest("wrong parameter action in request")
	}
	chatID, e := s.resolveChat(rq.p)
	if e != nil {
		return nil, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.actions = append(s.actions, ChatAction{ChatID: chatID, ThreadID: rq.p.int("message_thread_id"),
		Action: action, At: time.Now()})
	broadcast(&s.eventCh)
	return true, nil
}

// sendMessageDraft shows a draft in a private chat. The text is read first,
// as the real server does; drafts in other chats get Telegram's
// TEXTDRAFT_PEER_INVALID. The description for a zero draft_id is the
// fake's own.
func (s *Server) sendMessageDraft(rq *request) (any, *apiError) {
	text := rq.p["text"]
	if _, e := messageText(text, rq.p["parse_mode"], rq.p["entities"]); e != nil {
		return nil, e
	}
	chatID, e := s.resolveChat(rq.p)
	if e != nil {
		return nil, e
	}
	draftID := rq.p.int("draft_id")
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.chatLocked(chatID).typ != "private":
		return nil, badRequest("TEXTDRAFT_PEER_INVALID")
	case draftID == 0:
		return nil, badRequest("draft_id must be non-zero")
	}
	s.drafts = append(s.drafts, Draft{ChatID: chatID, ThreadID: rq.p.int("message_thread_id"), DraftID: draftID,
		Text: text, ParseMode: rq.p["parse_mode"], Params: maps.Clone(rq.p), At: time.Now()})
	broadcast(&s.eventCh)
	return true, nil
}

// ChatActions returns a copy of every recorded sendChatAction, oldest first.
func (s *Server) ChatActions() []ChatAction {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.actions)
}

// Drafts returns a copy of every recorded sendMessageDraft, oldest first.
func (s *Server) Drafts() []Draft {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.drafts)
}

// AllowedUpdates returns the allowed_updates list that getUpdates or
// setWebhook last sent
// (decoded; empty means the default set) and whether the client ever sent
// one. A call without it keeps the previous setting, as on the real
// server.
func (s *Server) AllowedUpdates() (list []string, sent bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.asked), s.askedOK
}

// Wait returns once cond reports true. cond is evaluated now and again after
// anything is recorded or pushed (sends, edits, answers, chat actions,
// drafts, updates); it runs without the server's lock, so it may call the
// server's methods. On ctx expiry (or Close) Wait returns ctx.Err() (or
// ErrClosed).
func (s *Server) Wait(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		ch := s.eventCh
		s.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return ErrClosed
		}
	}
}
