package faketelegram

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"time"
	"unicode"
	"unicode/utf16"
)

// queued is one update waiting for getUpdates.
type queued struct {
	id   int64
	kind string // "message", "edited_message", ...
	raw  json.RawMessage
}

// chatState is what the fake knows about one chat.
type chatState struct {
	raw      json.RawMessage // the chat object, as last seen
	typ      string
	username string
	last     int64                     // highest message_id seen or assigned
	msgs     map[int64]json.RawMessage // messages that exist, without reply_to_message
	bot      map[int64]*botMsg         // the messages the bot sent, by message_id
}

// messageKeys are the Update fields that carry a Message.
var messageKeys = []string{"message", "edited_message", "channel_post", "edited_channel_post",
	"business_message", "edited_business_message"}

// Push queues u for getUpdates and returns its update_id, which it assigns
// (one more than the highest so far) when u has none. Messages in u (and
// their reply_to_message) become known, so the bot can reply to them. Push
// panics if u cannot be encoded as JSON.
func (s *Server) Push(u Update) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.admitLocked(u)
	i := sort.Search(len(s.queue), func(i int) bool { return s.queue[i].id > q.id })
	s.queue = slices.Insert(s.queue, i, q)
	broadcast(&s.updatesCh)
	broadcast(&s.eventCh)
	return q.id
}

// admitLocked assigns the update_id, encodes u and notes its messages.
func (s *Server) admitLocked(u Update) queued {
	id, ok := toInt64(u["update_id"])
	if !ok || id <= 0 {
		id = s.nextUpdate
	}
	s.nextUpdate = max(s.nextUpdate, id+1)
	c := maps.Clone(u)
	if c == nil {
		c = Update{}
	}
	c["update_id"] = id
	raw, err := json.Marshal(c)
	if err != nil {
		panic(fmt.Sprintf("faketelegram: update cannot be encoded: %v", err))
	}
	var generic map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	_ = dec.Decode(&generic)
	kind := ""
	for _, k := range slices.Sorted(maps.Keys(generic)) {
		if k != "update_id" {
			kind = k
			break
		}
	}
	for _, k := range messageKeys {
		if m, ok := generic[k].(map[string]any); ok {
			s.noteMessageLocked(m, 0)
		}
	}
	if cq, ok := generic["callback_query"].(map[string]any); ok {
		if m, ok := cq["message"].(map[string]any); ok {
			s.noteMessageLocked(m, 0)
		}
		if id, ok := cq["id"].(string); ok && s.queries[id] == nil {
			s.queries[id] = &query{} // answerable once
		}
	}
	return queued{id: id, kind: kind, raw: raw}
}

// noteMessageLocked records a message (and the one it replies to) as existing.
func (s *Server) noteMessageLocked(m map[string]any, chatID int64) {
	if cm, ok := m["chat"].(map[string]any); ok {
		if id, ok := toInt64(cm["id"]); ok {
			chatID = id
			s.noteChatLocked(cm)
		}
	}
	mid, ok := toInt64(m["message_id"])
	if chatID == 0 || !ok {
		return
	}
	if rm, ok := m["reply_to_message"].(map[string]any); ok {
		s.noteMessageLocked(rm, chatID)
	}
	c := s.chatLocked(chatID)
	c.last = max(c.last, mid)
	cp := maps.Clone(m)
	delete(cp, "reply_to_message")
	c.msgs[mid] = mustJSON(cp)
}

// noteChatLocked remembers a chat object seen in an update or a builder.
func (s *Server) noteChatLocked(cm map[string]any) {
	id, ok := toInt64(cm["id"])
	if !ok {
		return
	}
	c := s.chatLocked(id)
	c.raw = mustJSON(cm)
	if t, ok := cm["type"].(string); ok {
		c.typ = t
	}
	if u, ok := cm["username"].(string); ok {
		c.username = u
	}
}

// chatLocked returns the state of chat id, creating a default one: private
// for positive ids, supergroup for negative ones.
func (s *Server) chatLocked(id int64) *chatState {
	c := s.chats[id]
	if c == nil {
		typ := "private"
		if id < 0 {
			typ = "supergroup"
		}
		c = &chatState{raw: mustJSON(map[string]any{"id": id, "type": typ}), typ: typ,
			msgs: map[int64]json.RawMessage{}, bot: map[int64]*botMsg{}}
		s.chats[id] = c
	}
	return c
}

// toInt64 reads an integer from a JSON-ish value.
func toInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case float64:
		return int64(x), x == float64(int64(x))
	case json.Number:
		n, err := strconv.ParseInt(string(x), 10, 64)
		return n, err == nil
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		return n, err == nil
	}
	return 0, false
}

// PrivateText builds a text message from a user in a private chat with the
// bot (chat id = userID). message_id is the chat's next one.
func (s *Server) PrivateText(userID int64, username, text string) Update {
	chat := map[string]any{"id": userID, "type": "private", "first_name": firstName(userID, username)}
	if username != "" {
		chat["username"] = username
	}
	m := s.textMessage(chat, userID, 0, user(userID, username), text)
	return Update{"message": m}
}

// GroupText builds a text message from a user in supergroup chatID.
func (s *Server) GroupText(chatID, userID int64, username, text string) Update {
	chat := map[string]any{"id": chatID, "type": "supergroup", "title": fmt.Sprintf("Test Group %d", chatID)}
	m := s.textMessage(chat, chatID, 0, user(userID, username), text)
	return Update{"message": m}
}

// TopicText builds a text message in forum topic threadID of supergroup
// chatID, as the real server sends it: is_topic_message, message_thread_id,
// and reply_to_message = the topic's creation message (message_id threadID,
// with forum_topic_created).
func (s *Server) TopicText(chatID int64, threadID int64, userID int64, username, text string) Update {
	chat := map[string]any{"id": chatID, "type": "supergroup", "title": fmt.Sprintf("Test Forum %d", chatID),
		"is_forum": true}
	from := user(userID, username)
	m := s.textMessage(chat, chatID, threadID, from, text)
	m["message_thread_id"] = threadID
	m["is_topic_message"] = true
	m["reply_to_message"] = map[string]any{
		"message_id": threadID, "from": from, "chat": chat, "date": m["date"],
		"message_thread_id": threadID, "is_topic_message": true,
		"forum_topic_created": map[string]any{"name": fmt.Sprintf("Topic %d", threadID), "icon_color": 7322096},
	}
	return Update{"message": m}
}

// textMessage reserves the chat's next message_id (above minID) and builds
// a text message.
func (s *Server) textMessage(chat map[string]any, chatID, minID int64, from map[string]any, text string) map[string]any {
	s.mu.Lock()
	s.noteChatLocked(chat)
	c := s.chatLocked(chatID)
	c.last = max(c.last, minID) + 1
	id := c.last
	s.mu.Unlock()
	m := map[string]any{"message_id": id, "from": from, "chat": chat, "date": time.Now().Unix(), "text": text}
	if ents := textEntities(text); len(ents) > 0 {
		m["entities"] = ents
	}
	return m
}

func user(id int64, username string) map[string]any {
	u := map[string]any{"id": id, "is_bot": false, "first_name": firstName(id, username), "language_code": "en"}
	if username != "" {
		u["username"] = username
	}
	return u
}

func firstName(id int64, username string) string {
	if username != "" {
		return username
	}
	return fmt.Sprintf("User %d", id)
}

// textEntities finds the entities the real server adds to incoming text:
// "mention" (@username) and "bot_command" (/cmd or /cmd@bot). Offsets and
// lengths are in UTF-16 code units.
func textEntities(text string) []map[string]any {
	rs := []rune(text)
	off := make([]int, len(rs)+1)
	for i, r := range rs {
		off[i+1] = off[i] + len(utf16.Encode([]rune{r}))
	}
	isWord := func(i int) bool {
		return i >= 0 && i < len(rs) && (rs[i] == '_' || rs[i] < 128 && (unicode.IsLetter(rs[i]) || unicode.IsDigit(rs[i])))
	}
	word := func(i int) int { // end of the word starting at i
		for isWord(i) {
			i++
		}
		return i
	}
	var out []map[string]any
	add := func(typ string, from, to int) {
		out = append(out, map[string]any{"type": typ, "offset": off[from], "length": off[to] - off[from]})
	}
	for i := 0; i < len(rs); i++ {
		switch {
		case rs[i] == '@' && !isWord(i-1):
			if j := word(i + 1); j-i-1 >= 3 && j-i-1 <= 32 {
				add("mention", i, j)
				i = j - 1
			}
		case rs[i] == '/' && (i == 0 || unicode.IsSpace(rs[i-1])):
			j := word(i + 1)
			if j-i-1 < 1 || j-i-1 > 64 {
				continue
			}
			if j < len(rs) && rs[j] == '@' {
				if k := word(j + 1); k-j-1 >= 3 {
					j = k
				}
			}
			add("bot_command", i, j)
			i = j - 1
		}
	}
	return out
}
