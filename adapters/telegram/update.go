package telegram

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

// topicFields are what tgbotapi v5.5.1 does not know about forum topics;
// every update is decoded a second time into this.
type topicFields struct {
	Message *struct {
		topicMessage
		ReplyTo *struct {
			ForumTopicCreated json.RawMessage `json:"forum_topic_created"`
		} `json:"reply_to_message"`
	} `json:"message"`
	CallbackQuery *struct {
		Message *topicMessage `json:"message"`
	} `json:"callback_query"`
}

// topicMessage is where a message stands among a forum's topics.
type topicMessage struct {
	MessageThreadID int64 `json:"message_thread_id"`
	IsTopicMessage  bool  `json:"is_topic_message"`
}

// update is one decoded incoming update.
type update struct {
	ID  int
	Msg *tgbotapi.Message // nil for updates ship does not answer
	// ThreadID is message_thread_id; IsTopic says it names a forum topic.
	ThreadID int64
	IsTopic  bool
	// ReplyIsTopicStart: reply_to_message is the topic's creation message,
	// which every message in a topic points at. It is not a reply to
	// anyone, least of all the bot.
	ReplyIsTopicStart bool
	// Callback is a button press (Msg is nil then); ThreadID and IsTopic
	// describe the message that carries the button.
	Callback *tgbotapi.CallbackQuery
}

// updateID reads update_id alone, so that an update whose other fields do
// not decode can still be named (and confirmed). ok is false when raw is
// not an object with a numeric update_id.
func updateID(raw json.RawMessage) (id int64, ok bool) {
	var head struct {
		UpdateID *int64 `json:"update_id"`
	}
	if err := json.Unmarshal(raw, &head); err != nil || head.UpdateID == nil {
		return 0, false
	}
	return *head.UpdateID, true
}

func decodeUpdate(raw json.RawMessage) (update, error) {
	var u tgbotapi.Update
	if err := json.Unmarshal(raw, &u); err != nil {
		return update{}, fmt.Errorf("decoding update: %w", err)
	}
	var t topicFields
	if err := json.Unmarshal(raw, &t); err != nil {
		return update{}, fmt.Errorf("decoding update: %w", err)
	}
	out := update{ID: u.UpdateID, Msg: u.Message, Callback: u.CallbackQuery}
	switch {
	case t.Message != nil:
		out.ThreadID = t.Message.MessageThreadID
		out.IsTopic = t.Message.IsTopicMessage
		out.ReplyIsTopicStart = t.Message.ReplyTo != nil && len(t.Message.ReplyTo.ForumTopicCreated) > 0
	case t.CallbackQuery != nil && t.CallbackQuery.Message != nil:
		out.ThreadID = t.CallbackQuery.Message.MessageThreadID
		out.IsTopic = t.CallbackQuery.Message.IsTopicMessage
	}
	return out, nil
}

// chatKey names a Telegram chat (telegram:chat:<id>); a forum topic is a
// chat of its own (…:topic:<thread id>).
func chatKey(chatID, threadID int64, isTopic bool) string {
	key := "telegram:chat:" + strconv.FormatInt(chatID, 10)
	if isTopic && threadID != 0 {
		key += ":topic:" + strconv.FormatInt(threadID, 10)
	}
	return key
}

// me is the bot's own identity, learned with getMe.
type me struct {
	ID       int64
	Username string
	// mention matches "@username" as a word, with one following blank.
	mention *regexp.Regexp
}

func newMe(id int64, username string) me {
	m := me{ID: id, Username: username}
	if username != "" {
		m.mention = regexp.MustCompile(`(?i)(^|[^\w@])@` + regexp.QuoteMeta(username) + `\b[ \t]?`)
	}
	return m
}

// addressing says how a group message relates to the bot.
type addressing struct {
	mentioned bool   // @username or a text_mention of the bot
	replyToMe bool   // a reply to one of the bot's messages
	command   string // "/help@bot" → "help"; "" when not a command for us
	otherBot  bool   // a /command addressed to another bot
}

func address(u update, bot me) addressing {
	m := u.Msg
	var a addressing
	text, entities := m.Text, m.Entities
	if text == "" {
		text, entities = m.Caption, m.CaptionEntities
	}
	for _, e := range entities {
		switch e.Type {
		case "mention":
			if strings.EqualFold(entitySlice(text, e), "@"+bot.Username) {
				a.mentioned = true
			}
		case "text_mention":
			if e.User != nil && e.User.ID == bot.ID {
				a.mentioned = true
			}
		}
	}
	// Entities can be missing (forwarded or edited text): look at the text.
	if !a.mentioned && bot.mention != nil && bot.mention.MatchString(text) {
		a.mentioned = true
	}
	if r := m.ReplyToMessage; r != nil && r.From != nil && r.From.ID == bot.ID && !u.ReplyIsTopicStart {
		a.replyToMe = true
	}
	if strings.HasPrefix(text, "/") {
		word := strings.Fields(text)[0][1:]
		name, target, hasTarget := strings.Cut(word, "@")
		switch {
		case hasTarget && !strings.EqualFold(target, bot.Username):
			a.otherBot = true
		case name != "":
			a.command = strings.ToLower(name)
		}
	}
	return a
}

// entitySlice returns the text an entity covers; offsets count UTF-16 code
// units, as everywhere in the Bot API.
func entitySlice(text string, e tgbotapi.MessageEntity) string {
	var out []rune
	pos := 0
	for _, r := range text {
		n := 1
		if r >= 0x10000 {
			n = 2
		}
		if pos >= e.Offset && pos+n <= e.Offset+e.Length {
			out = append(out, r)
		}
		pos += n
	}
	return string(out)
}

// stripMention removes the bot's @username and the one blank after it, and
// nothing else: the rest of the user's text reaches the model verbatim.
func (b me) stripMention(text string) string {
	if b.mention == nil {
		return strings.TrimSpace(text)
	}
	return strings.TrimSpace(b.mention.ReplaceAllString(text, "$1"))
}

// isService reports a message without anything to answer: joins, pins,
// topic events and the like.
func isService(m *tgbotapi.Message) bool {
	return m.Text == "" && m.Caption == "" && len(m.Photo) == 0 && m.Document == nil && m.Voice == nil &&
		m.Audio == nil && m.Video == nil && m.VideoNote == nil && m.Sticker == nil && m.Animation == nil
}

func displayName(u *tgbotapi.User) string {
	if u == nil {
		return ""
	}
	if u.UserName != "" {
		return u.UserName
	}
	return strings.TrimSpace(u.FirstName + " " + u.LastName)
}
