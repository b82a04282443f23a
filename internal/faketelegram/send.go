package faketelegram

import (
	"encoding/json"
	"maps"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

const (
	maxTextLen    = 4096 // Unicode code points after entity parsing
	maxCaptionLen = 1024
)

// resolveChat reads chat_id: an integer, or "@username" of a chat the fake
// has seen.
func (s *Server) resolveChat(p params) (int64, *apiError) {
	v := strings.TrimSpace(p["chat_id"])
	if v == "" {
		return 0, badRequest("chat_id is empty")
	}
	if id, err := strconv.ParseInt(v, 10, 64); err == nil && id != 0 {
		return id, nil
	}
	if name, ok := strings.CutPrefix(v, "@"); ok && name != "" {
		s.mu.Lock()
		defer s.mu.Unlock()
		for id, c := range s.chats {
			if strings.EqualFold(c.username, name) {
				return id, nil
			}
		}
	}
	return 0, badRequest("chat not found")
}

// formatted checks text against parse_mode, or against entities (the JSON
// "entities" parameter, which replaces parse_mode when it lists any), and returns
// the text a client would see (markup removed, surrounding white space
// trimmed).
func formatted(text, mode, entities string) (string, *apiError) {
	if !utf8.ValidString(text) {
		return "", badRequest("strings must be encoded in UTF-8")
	}
	if given, e := checkEntities(text, entities); e != nil {
		return "", e
	} else if given {
		return strings.TrimSpace(text), nil
	}
	var plain string
	var err error
	switch strings.ToLower(mode) {
	case "":
		plain = text
	case "markdownv2":
		plain, err = parseMarkdownV2(text)
	case "html":
		plain, err = parseHTML(text)
	case "markdown":
		plain, err = parseMarkdown(text)
	default:
		return "", badRequest("unsupported parse_mode")
	}
	if err != nil {
		return "", badRequest("can't parse entities: %v", err)
	}
	return strings.TrimSpace(plain), nil
}

// outgoing is what a send method is about to record.
type outgoing struct {
	method, text string
	plain        string // text (or caption) as the client sees it
	isText       bool   // a text message, not a caption
	chatID       int64
	thread       int64
	replyTo      int64
	allowNoReply bool
	kb           *keyboard // the inline keyboard, nil without one
	// entities and mode format the text or caption: the entities (or
	// caption_entities) JSON and parse_mode as sent.
	entities, mode string
}

// target reads chat_id, message_thread_id, the reply parameters and
// reply_markup.
func (s *Server) target(rq *request, method, text string) (*outgoing, *apiError) {
	chatID, e := s.resolveChat(rq.p)
	if e != nil {
		return nil, e
	}
	kb, e := parseKeyboard(rq.p["reply_markup"])
	if e != nil {
		return nil, e
	}
	o := &outgoing{method: method, text: text, chatID: chatID, thread: rq.p.int("message_thread_id"),
		replyTo: rq.p.int("reply_to_message_id"), allowNoReply: rq.p.bool("allow_sending_without_reply"), kb: kb,
		mode: rq.p["parse_mode"]}
	if v := strings.TrimSpace(rq.p["reply_parameters"]); v != "" {
		var rp struct {
			MessageID                int64 `json:"message_id"`
			AllowSendingWithoutReply bool  `json:"allow_sending_without_reply"`
		}
		if err := json.Unmarshal([]byte(v), &rp); err != nil {
			return nil, badRequest("can't parse reply parameters JSON object")
		}
		o.replyTo = rp.MessageID
		o.allowNoReply = o.allowNoReply || rp.AllowSendingWithoutReply
	}
	return o, nil
}

// deliver checks the reply target, assigns the message_id, records the send
// and returns the Message; fill adds the method's own fields.
func (s *Server) deliver(rq *request, o *outgoing, fill func(m map[string]any)) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chatLocked(o.chatID)
	replyID := o.replyTo
	replied, found := c.msgs[replyID]
	if o.replyTo != 0 && !found && !o.allowNoReply {
		return nil, badRequest("message to be replied not found")
	}
	if !found && o.replyTo == 0 && o.thread != 0 {
		replyID = o.thread // in a topic, the topic's creation message
		replied, found = c.msgs[replyID]
	}
	c.last++
	now := time.Now()
	m := map[string]any{"message_id": c.last, "from": s.botUser(), "chat": c.raw, "date": now.Unix()}
	if o.thread != 0 {
		m["message_thread_id"] = o.thread
		m["is_topic_message"] = true
	}
	fill(m)
	b := &botMsg{source: o.text, mode: o.mode, entities: givenEntities(o.entities), plain: o.plain,
		isText: o.isText, thread: o.thread}
	if o.kb != nil {
		m["reply_markup"] = o.kb.raw
		b.kb = o.kb
	}
	c.msgs[c.last] = mustJSON(m)
	if found {
		m["reply_to_message"] = replied
		b.replyTo = replyID
	}
	c.bot[c.last] = b
	s.sent = append(s.sent, Sent{Method: o.method, ChatID: o.chatID, ThreadID: o.thread, ReplyTo: o.replyTo,
		Text: o.text, ParseMode: o.mode, Buttons: o.kb.rows(), MessageID: c.last,
		Params: maps.Clone(rq.p), At: now})
	broadcast(&s.sentCh)
	broadcast(&s.eventCh)
	return m, nil
}

func (s *Server) sendMessage(rq *request) (any, *apiError) {
	text := rq.p["text"]
	o, e := s.target(rq, "sendMessage", text)
	if e != nil {
		return nil, e
	}
	plain, e := messageText(text, rq.p["parse_mode"], rq.p["entities"])
	if e != nil {
		return nil, e
	}
	o.plain, o.isText, o.entities = plain, true, rq.p["entities"]
	return s.deliver(rq, o, func(m map[string]any) { m["text"] = plain })
}

// messageText checks a message's text as the real server does (markup
// parsed, 1 to 4096 characters once parsed) and returns it as shown.
func messageText(text, mode, entities string) (string, *apiError) {
	plain, e := formatted(text, mode, entities)
	switch {
	case e != nil:
		return "", e
	case plain == "":
		return "", badRequest("message text is empty")
	case utf8.RuneCountInString(plain) > maxTextLen:
		return "", badRequest("message is too long")
	}
	return plain, nil
}
