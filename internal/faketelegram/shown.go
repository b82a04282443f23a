package faketelegram

import (
	"maps"
	"time"
)

// Deletion records one successful deleteMessage call.
type Deletion struct {
	ChatID    int64             // the resolved chat_id
	MessageID int64             // the deleted message
	Params    map[string]string // every parameter as received (do not modify)
	At        time.Time         // when the call was answered
}

// deleteMessage deletes a message the bot sent. The real server also lets
// admins delete others' messages; the fake's bot is never an admin.
func (s *Server) deleteMessage(rq *request) (any, *apiError) {
	chatID, e := s.resolveChat(rq.p)
	if e != nil {
		return nil, e
	}
	mid := rq.p.int("message_id")
	if mid == 0 {
		return nil, badRequest("message identifier is not specified")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chats[chatID]
	if c == nil || c.msgs[mid] == nil {
		return nil, badRequest("message to delete not found")
	}
	if c.bot[mid] == nil {
		return nil, badRequest("message can't be deleted")
	}
	delete(c.msgs, mid)
	delete(c.bot, mid)
	s.deletions = append(s.deletions, Deletion{ChatID: chatID, MessageID: mid, Params: maps.Clone(rq.p), At: time.Now()})
	broadcast(&s.eventCh)
	return true, nil
}

// Deletions returns the successful deleteMessage calls, oldest first.
func (s *Server) Deletions() []Deletion {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Deletion(nil), s.deletions...)
}

// Shown returns what the chats show of the bot's messages now: Sent, in
// order, with each message's text as last edited and deleted messages left
// out. A reply streamed by edits reads as its final text here.
func (s *Server) Shown() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Sent, 0, len(s.sent))
	for _, m := range s.sent {
		c := s.chats[m.ChatID]
		if c == nil || c.bot[m.MessageID] == nil {
			continue
		}
		m.Text = c.bot[m.MessageID].source
		out = append(out, m)
	}
	return out
}
