package faketelegram

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"
)

// botMsg is what the fake keeps about a message the bot sent.
type botMsg struct {
	source, mode string    // text (or caption) as last sent, markup included, and its parse_mode
	entities     string    // the entities parameter (JSON) it was last sent with, "" without
	plain        string    // as the client sees it
	isText       bool      // a text message (editMessageText applies), not a caption
	kb           *keyboard // the inline keyboard, nil without one
	thread       int64     // message_thread_id, 0 outside topics
	replyTo      int64     // the message it replies to, 0 for none
	edits        int
}

// Edit records one successful editMessageText or editMessageReplyMarkup call.
type Edit struct {
	Method    string            // "editMessageText" or "editMessageReplyMarkup"
	ChatID    int64             // the resolved chat_id
	MessageID int64             // the edited message
	Text      string            // the new text exactly as sent, markup included ("" for editMessageReplyMarkup)
	ParseMode string            // parse_mode as sent
	Buttons   [][]Button        // the inline keyboard after the edit; nil when there is none
	Params    map[string]string // every parameter as received (do not modify)
	At        time.Time         // when the call was answered
}

// Message is a message the bot sent, as it stands after any edits.
type Message struct {
	ChatID    int64
	MessageID int64
	ThreadID  int64      // message_thread_id, 0 outside topics
	Text      string     // the text (or caption) as the client sees it: markup removed
	Source    string     // the text as last sent, markup included
	ParseMode string     // the parse_mode it was last sent with
	Entities  string     // the entities (JSON) it was last sent with; "" without
	Buttons   [][]Button // the inline keyboard; nil without one
	Edits     int        // how many edits succeeded
}

// Message returns message messageID of chat chatID if the bot sent it.
func (s *Server) Message(chatID, messageID int64) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chats[chatID]
	if c == nil || c.bot[messageID] == nil {
		return Message{}, false
	}
	b := c.bot[messageID]
	return Message{ChatID: chatID, MessageID: messageID, ThreadID: b.thread, Text: b.plain, Source: b.source,
		ParseMode: b.mode, Entities: b.entities, Buttons: b.kb.rows(), Edits: b.edits}, true
}

// Edits returns a copy of every recorded edit, oldest first.
func (s *Server) Edits() []Edit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.edits)
}

// messageLocked returns message id of chat c as the server answers it, with
// reply_to_message for a message the bot sent as a reply.
func (s *Server) messageLocked(c *chatState, id int64) map[string]any {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(c.msgs[id]))
	dec.UseNumber()
	_ = dec.Decode(&m) // the fake encoded it
	if b := c.bot[id]; b != nil && b.replyTo != 0 {
		if r, ok := c.msgs[b.replyTo]; ok {
			m["reply_to_message"] = r
		}
	}
	return m
}

// newText is the text part of an editMessageText.
type newText struct{ source, mode, entities, plain string }

// key tells two texts apart as Telegram does, by the text and its
// formatting: text without markup compares by what the client sees.
func (t newText) key() string {
	if t.entities != "" {
		return t.plain + "\x00entities\x00" + t.entities
	}
	if strings.TrimSpace(t.source) == t.plain {
		return t.plain
	}
	return t.plain + "\x00" + strings.ToLower(t.mode) + "\x00" + t.source
}

func (s *Server) editMessageText(rq *request) (any, *apiError) {
	t := newText{source: rq.p["text"], mode: rq.p["parse_mode"], entities: givenEntities(rq.p["entities"])}
	var e *apiError
	t.plain, e = messageText(t.source, t.mode, t.entities)
	if e != nil {
		return nil, e
	}
	return s.edit(rq, "editMessageText", &t)
}

func (s *Server) editMessageReplyMarkup(rq *request) (any, *apiError) {
	return s.edit(rq, "editMessageReplyMarkup", nil)
}

// edit applies an edit of a message the bot sent: a new text (t, nil for
// editMessageReplyMarkup) and the keyboard in reply_markup, which replaces
// the message's (absent: removes it). message_thread_id plays no part.
func (s *Server) edit(rq *request, method string, t *newText) (any, *apiError) {
	kb, e := parseKeyboard(rq.p["reply_markup"])
	if e != nil {
		return nil, e
	}
	mid := rq.p.int("message_id")
	if strings.TrimSpace(rq.p["chat_id"]) == "" && mid == 0 {
		if strings.TrimSpace(rq.p["inline_message_id"]) != "" {
			return nil, badRequest("MESSAGE_ID_INVALID") // the fake has no inline messages
		}
		return nil, badRequest("message identifier is not specified")
	}
	chatID, e := s.resolveChat(rq.p)
	if e != nil {
		return nil, e
	}
	if mid == 0 {
		return nil, badRequest("message identifier is not specified")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chats[chatID]
	if c == nil || c.msgs[mid] == nil {
		return nil, badRequest("message to edit not found")
	}
	b := c.bot[mid]
	switch {
	case b == nil:
		return nil, badRequest("message can't be edited")
	case t != nil && !b.isText:
		return nil, badRequest("there is no text in the message to edit")
	}
	old := newText{source: b.source, mode: b.mode, entities: b.entities, plain: b.plain}
	if kb.equal(b.kb) && (t == nil || t.key() == old.key()) {
		return nil, badRequest("message is not modified: specified new message content and reply markup are " +
			"exactly the same as a current content and reply markup of the message")
	}
	m := s.messageLocked(c, mid)
	delete(m, "reply_to_message")
	now := time.Now()
	if t != nil {
		m["text"], m["edit_date"] = t.plain, now.Unix()
		b.source, b.mode, b.entities, b.plain = t.source, t.mode, t.entities, t.plain
	}
	delete(m, "reply_markup")
	if kb != nil {
		m["reply_markup"] = kb.raw
	}
	b.kb = kb
	b.edits++
	c.msgs[mid] = mustJSON(m)
	ed := Edit{Method: method, ChatID: chatID, MessageID: mid, ParseMode: rq.p["parse_mode"], Buttons: kb.rows(),
		Params: maps.Clone(rq.p), At: now}
	if t != nil {
		ed.Text = t.source
	}
	s.edits = append(s.edits, ed)
	broadcast(&s.eventCh)
	return s.messageLocked(c, mid), nil
}
