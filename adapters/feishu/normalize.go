package feishu

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"
)

// chatKey names a Feishu chat (feishu:chat:<id>); a thread is a conversation
// of its own (…:thread:<id>).
func chatKey(chatID, threadID string) string {
	if threadID != "" {
		return "feishu:chat:" + chatID + ":thread:" + threadID
	}
	return "feishu:chat:" + chatID
}

// mentions maps the @_user_N placeholders of one message to the people
// behind them.
type mentions struct {
	byKey map[string]mention
	bot   bool // the bot is among them
}

type mention struct {
	name  string
	isBot bool
}

func newMentions(ms []*larkim.MentionEvent, botID string) mentions {
	out := mentions{byKey: make(map[string]mention, len(ms))}
	for _, m := range ms {
		if m == nil || m.Key == nil {
			continue
		}
		isBot := botID != "" && m.Id != nil && deref(m.Id.OpenId) == botID
		out.byKey[*m.Key] = mention{name: deref(m.Name), isBot: isBot}
		out.bot = out.bot || isBot
	}
	return out
}

// placeholder matches a mention key in text content, with the one space
// that follows it (dropped together with the bot's own mention).
var placeholder = regexp.MustCompile(`@_user_\d+ ?|@_all ?`)

// resolve replaces the placeholders in text: the bot's own mention goes
// entirely (the model sees what was said to it), others become @Name.
func (m mentions) resolve(text string) string {
	return placeholder.ReplaceAllStringFunc(text, func(s string) string {
		key := strings.TrimSuffix(s, " ")
		space := s[len(key):]
		if key == "@_all" {
			return "@all" + space
		}
		who, ok := m.byKey[key]
		switch {
		case !ok:
			return s
		case who.isBot:
			return ""
		case who.name == "":
			return "@someone" + space
		}
		return "@" + who.name + space
	})
}

// messageText turns a message's content into the plain text the model
// sees. Text and rich text (post) come through as text; other kinds are
// described in one line (attachments are not downloaded).
func messageText(msgType, content string, m mentions) string {
	switch msgType {
	case "text":
		var c struct {
			Text string `json:"text"`
		}
		if json.Unmarshal([]byte(content), &c) != nil {
			return "[text message that could not be read]"
		}
		return strings.TrimSpace(m.resolve(c.Text))
	case "post":
		return postText(content, m)
	case "image":
		return "[image message]"
	case "file":
		var c struct {
			FileName string `json:"file_name"`
		}
		_ = json.Unmarshal([]byte(content), &c)
		if c.FileName != "" {
			return fmt.Sprintf("[file message: %s]", c.FileName)
		}
		return "[file message]"
	case "audio":
		var c struct {
			Duration int `json:"duration"` // milliseconds
		}
		_ = json.Unmarshal([]byte(content), &c)
		if c.Duration > 0 {
			return fmt.Sprintf("[audio message, %d s, not transcribed]", (c.Duration+999)/1000)
		}
		return "[audio message, not transcribed]"
	case "media":
		return "[video message]"
	case "sticker":
		return "[sticker]"
	case "interactive":
		return "[card message]"
	case "merge_forward":
		return "[forwarded conversation]"
	case "share_chat":
		return "[shared group card]"
	case "share_user":
		return "[shared contact card]"
	case "location":
		var c struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal([]byte(content), &c)
		if c.Name != "" {
			return fmt.Sprintf("[location: %s]", c.Name)
		}
		return "[location]"
	case "":
		return "[message]"
	}
	return fmt.Sprintf("[%s message]", msgType)
}

// postElem is one element of a rich-text paragraph.
type postElem struct {
	Tag      string `json:"tag"`
	Text     string `json:"text"`
	Href     string `json:"href"`
	UserID   string `json:"user_id"`
	UserName string `json:"user_name"`
	Language string `json:"language"`
	Emoji    string `json:"emoji_type"`
	ImageKey string `json:"image_key"`
}

type postBody struct {
	Title   string       `json:"title"`
	Content [][]postElem `json:"content"`
}

// postText flattens rich text: the title, then one line per paragraph.
func postText(content string, m mentions) string {
	body, ok := readPost(content)
	if !ok {
		return "[rich text message that could not be read]"
	}
	var lines []string
	if t := strings.TrimSpace(body.Title); t != "" {
		lines = append(lines, t)
	}
	for _, para := range body.Content {
		var b strings.Builder
		for _, e := range para {
			s := elemText(e, m)
			if b.Len() == 0 {
				// A paragraph that began with the bot's mention does not
				// begin with the space that followed it.
				s = strings.TrimLeft(s, " ")
			}
			b.WriteString(s)
		}
		lines = append(lines, strings.TrimRight(b.String(), " "))
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// postParagraphs returns the paragraphs of a rich-text post (none when it
// cannot be read).
func postParagraphs(content string) [][]postElem {
	body, _ := readPost(content)
	return body.Content
}

// readPost reads a post. Received posts carry {"title","content"}; posts
// in the send format wrap that in a language ({"zh_cn":{…}}), which is
// accepted too.
func readPost(content string) (postBody, bool) {
	var body postBody
	if err := json.Unmarshal([]byte(content), &body); err != nil {
		return postBody{}, false
	}
	if body.Title == "" && body.Content == nil {
		var byLang map[string]postBody
		if json.Unmarshal([]byte(content), &byLang) == nil {
			for _, lang := range []string{"zh_cn", "en_us", "ja_jp"} {
				if b, ok := byLang[lang]; ok {
					body = b
					break
				}
			}
			if body.Content == nil {
				for _, b := range byLang {
					body = b
					break
				}
			}
		}
	}
	return body, true
}

func elemText(e postElem, m mentions) string {
	switch e.Tag {
	case "text", "md":
		return m.resolve(e.Text)
	case "a":
		switch {
		case e.Text == "" || e.Text == e.Href:
			return e.Href
		case e.Href == "":
			return e.Text
		}
		return e.Text + " (" + e.Href + ")"
	case "at":
		if who, ok := m.byKey[e.UserID]; ok {
			if who.isBot {
				return ""
			}
			if who.name != "" {
				return "@" + who.name
			}
		}
		if e.UserID == "all" || e.UserID == "@_all" {
			return "@all"
		}
		if e.UserName != "" {
			return "@" + e.UserName
		}
		return "@someone"
	case "img":
		return "[image]"
	case "media":
		return "[video]"
	case "emotion":
		return ":" + e.Emoji + ":"
	case "code_block":
		return "\n```" + e.Language + "\n" + strings.TrimRight(e.Text, "\n") + "\n```\n"
	case "hr":
		return "---"
	}
	return e.Text
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
