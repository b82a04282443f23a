package fakelark

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// Event is one im.message.receive_v1 event: a user's message to the bot.
// Build one with P2PText, GroupText, Post or Image and adjust its fields;
// EventJSON renders it in the schema 2.0 wire shape.
type Event struct {
	EventID      string
	MessageID    string
	ChatID       string
	ChatType     string // "p2p" or "group"
	MessageType  string // "text", "post", "image", ...
	Content      string // the content JSON string, e.g. {"text":"hi"}
	SenderOpenID string
	SenderType   string // "user" (default) or "app"
	Mentions     []Mention
	ThreadID     string
	RootID       string
	ParentID     string
	CreateTime   time.Time
}

// Mention is one entry of the event's mentions array: the user behind an
// @_user_N placeholder in the content.
type Mention struct {
	Key    string // "@_user_1"
	OpenID string
	Name   string
}

// InThread returns a copy of e posted in a thread (a topic) that starts at
// message rootID: thread_id, root_id and parent_id are set.
func (e Event) InThread(threadID, rootID string) Event {
	e.ThreadID, e.RootID, e.ParentID = threadID, rootID, rootID
	return e
}

// info is where the message lives, for replies to it.
func (e Event) info() msgInfo {
	return msgInfo{chatID: e.ChatID, chatType: e.ChatType, threadID: e.ThreadID, rootID: e.RootID}
}

// BotMention is the mention of the bot under the placeholder key ("@_user_1").
func (s *Server) BotMention(key string) Mention {
	return Mention{Key: key, OpenID: s.opts.BotOpenID, Name: s.opts.BotName}
}

// newEvent fills the ids and sender of a new event.
func (s *Server) newEvent(chatID, chatType, userOpenID, msgType string, content any, mentions []Mention) Event {
	n := s.next()
	b, err := json.Marshal(content)
	if err != nil {
		panic("fakelark: " + err.Error()) // builders pass plain maps
	}
	return Event{
		EventID:      fmt.Sprintf("ev_%d", n),
		MessageID:    fmt.Sprintf("om_in_%d", n),
		ChatID:       chatID,
		ChatType:     chatType,
		MessageType:  msgType,
		Content:      string(b),
		SenderOpenID: userOpenID,
		SenderType:   "user",
		Mentions:     mentions,
		CreateTime:   time.Now(),
	}
}

// P2PText is a text message in the one-to-one chat chatID.
func (s *Server) P2PText(chatID, userOpenID, text string) Event {
	return s.newEvent(chatID, "p2p", userOpenID, "text", map[string]string{"text": text}, nil)
}

// GroupText is a text message in the group chatID. Mentions appear in text
// as their keys ("@_user_1 hello"), as Feishu sends them.
func (s *Server) GroupText(chatID, userOpenID, text string, mentions ...Mention) Event {
	return s.newEvent(chatID, "group", userOpenID, "text", map[string]string{"text": text}, mentions)
}

// PostElem is one element of a rich-text paragraph.
type PostElem = map[string]any

// PostText is a text element.
func PostText(text string) PostElem { return PostElem{"tag": "text", "text": text} }

// PostLink is a link element.
func PostLink(text, href string) PostElem { return PostElem{"tag": "a", "text": text, "href": href} }

// PostAt is a mention element; key is the mention's placeholder.
func PostAt(key, name string) PostElem {
	return PostElem{"tag": "at", "user_id": key, "user_name": name}
}

// PostImage is an image element.
func PostImage(imageKey string) PostElem { return PostElem{"tag": "img", "image_key": imageKey} }

// Post is a rich-text message, content {"title":…,"content":[[elements…]…]}
// as the receive event carries it.
func (s *Server) Post(chatID, chatType, userOpenID, title string, paragraphs [][]PostElem, mentions ...Mention) Event {
	if paragraphs == nil {
		paragraphs = [][]PostElem{}
	}
	return s.newEvent(chatID, chatType, userOpenID, "post",
		map[string]any{"title": title, "content": paragraphs}, mentions)
}

// Image is an image message.
func (s *Server) Image(chatID, chatType, userOpenID, imageKey string) Event {
	return s.newEvent(chatID, chatType, userOpenID, "image", map[string]string{"image_key": imageKey}, nil)
}

// EventJSON renders ev as the event body Feishu delivers (schema 2.0), the
// payload of a websocket event frame and the plaintext of a webhook call.
func (s *Server) EventJSON(ev Event) []byte {
	created := ev.CreateTime
	if created.IsZero() {
		created = time.Now()
	}
	ms := strconv.FormatInt(created.UnixMilli(), 10)
	senderType := ev.SenderType
	if senderType == "" {
		senderType = "user"
	}
	mentions := make([]map[string]any, 0, len(ev.Mentions))
	for _, m := range ev.Mentions {
		mentions = append(mentions, map[string]any{
			"key":        m.Key,
			"id":         map[string]any{"open_id": m.OpenID, "union_id": "on_" + m.OpenID, "user_id": ""},
			"name":       m.Name,
			"tenant_key": s.opts.TenantKey,
		})
	}
	msg := map[string]any{
		"message_id": ev.MessageID, "root_id": ev.RootID, "parent_id": ev.ParentID,
		"create_time": ms, "update_time": ms, "chat_id": ev.ChatID, "chat_type": ev.ChatType,
		"message_type": ev.MessageType, "content": ev.Content, "user_agent": "",
	}
	if ev.ThreadID != "" {
		msg["thread_id"] = ev.ThreadID
	}
	if len(mentions) > 0 {
		msg["mentions"] = mentions
	}
	body := map[string]any{
		"schema": "2.0",
		"header": map[string]any{
			"event_id": ev.EventID, "token": s.opts.VerificationToken, "create_time": ms,
			"event_type": "im.message.receive_v1", "tenant_key": s.opts.TenantKey, "app_id": s.opts.AppID,
		},
		"event": map[string]any{
			"sender": map[string]any{
				"sender_id":   map[string]any{"open_id": ev.SenderOpenID, "union_id": "on_" + ev.SenderOpenID, "user_id": ""},
				"sender_type": senderType,
				"tenant_key":  s.opts.TenantKey,
			},
			"message": msg,
		},
	}
	b, err := json.Marshal(body)
	if err != nil {
		panic("fakelark: " + err.Error())
	}
	return b
}
