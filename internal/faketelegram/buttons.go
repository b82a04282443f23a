package faketelegram

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Button is one button of an inline keyboard (reply_markup.inline_keyboard).
type Button struct {
	Text         string // the label
	CallbackData string // callback_data; "" for other kinds of buttons
	URL          string // url; "" for other kinds of buttons
}

// Answer records one successful answerCallbackQuery call.
type Answer struct {
	QueryID   string            // callback_query_id
	Text      string            // text shown to the user, "" for none
	ShowAlert bool              // show_alert
	URL       string            // url, "" for none
	Params    map[string]string // every parameter as received (do not modify)
	At        time.Time         // when the call was answered
}

// keyboard is a parsed inline keyboard.
type keyboard struct {
	raw     json.RawMessage // {"inline_keyboard":[[...]]} as the server answers it
	buttons [][]Button
}

// rows returns a copy of the buttons, nil for no keyboard.
func (k *keyboard) rows() [][]Button {
	if k == nil {
		return nil
	}
	out := make([][]Button, len(k.buttons))
	for i, r := range k.buttons {
		out[i] = slices.Clone(r)
	}
	return out
}

func (k *keyboard) equal(o *keyboard) bool {
	if k == nil || o == nil {
		return k == o
	}
	return bytes.Equal(k.raw, o.raw)
}

// otherKinds are the button fields other than url and callback_data that
// make an inline button.
var otherKinds = []string{"web_app", "login_url", "switch_inline_query", "switch_inline_query_current_chat",
	"switch_inline_query_chosen_chat", "copy_text", "callback_game", "pay"}

// parseKeyboard reads reply_markup as the real server does: the Bot API
// parses every button first (its errors read "can't parse inline keyboard
// button: ..."), then Telegram checks the contents (BUTTON_DATA_INVALID for
// callback_data over 64 bytes, BUTTON_TEXT_INVALID for an empty label). A
// markup without inline_keyboard (a reply keyboard, remove_keyboard,
// force_reply) or without buttons attaches nothing to the message: nil.
func parseKeyboard(v string) (*keyboard, *apiError) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var top any
	dec := json.NewDecoder(strings.NewReader(v))
	dec.UseNumber()
	if err := dec.Decode(&top); err != nil {
		return nil, badRequest("can't parse reply keyboard markup JSON object")
	}
	obj, ok := top.(map[string]any)
	if !ok {
		return nil, badRequest("object expected as reply markup")
	}
	ik, ok := obj["inline_keyboard"]
	if !ok {
		return nil, nil
	}
	rows, ok := ik.([]any)
	if !ok {
		return nil, badRequest(`field "inline_keyboard" of the InlineKeyboardMarkup must be an Array`)
	}
	k := &keyboard{}
	var raws [][]map[string]any
	for _, row := range rows {
		r, ok := row.([]any)
		if !ok {
			return nil, badRequest(`field "inline_keyboard" of the InlineKeyboardMarkup must be an Array of Arrays`)
		}
		var bs []Button
		var rs []map[string]any
		for _, x := range r {
			raw, b, msg := parseButton(x)
			if msg != "" {
				return nil, badRequest("can't parse inline keyboard button: %s", msg)
			}
			bs, rs = append(bs, b), append(rs, raw)
		}
		if len(bs) > 0 {
			k.buttons, raws = append(k.buttons, bs), append(raws, rs)
		}
	}
	for _, r := range k.buttons {
		for _, b := range r {
			switch {
			case len(b.CallbackData) > 64:
				return nil, badRequest("BUTTON_DATA_INVALID")
			case strings.TrimSpace(b.Text) == "":
				return nil, badRequest("BUTTON_TEXT_INVALID")
			}
		}
	}
	if len(k.buttons) == 0 {
		return nil, nil
	}
	k.raw = mustJSON(map[string]any{"inline_keyboard": raws})
	return k, nil
}

// parseButton reads one InlineKeyboardButton; msg is the Bot API's error.
// An empty url or callback_data does not count, as in the real server.
func parseButton(x any) (raw map[string]any, b Button, msg string) {
	obj, ok := x.(map[string]any)
	if !ok {
		return nil, b, "InlineKeyboardButton must be an Object"
	}
	str := func(k string) (string, string) {
		v, ok := obj[k]
		if !ok {
			return "", ""
		}
		s, ok := v.(string)
		if !ok {
			return "", fmt.Sprintf("Field %q must be of type String", k)
		}
		return s, ""
	}
	if _, ok := obj["text"]; !ok {
		return nil, b, `Can't find field "text"`
	}
	if b.Text, msg = str("text"); msg != "" {
		return nil, b, msg
	}
	if b.URL, msg = str("url"); msg != "" {
		return nil, b, msg
	}
	if b.URL != "" {
		return map[string]any{"text": b.Text, "url": b.URL}, Button{Text: b.Text, URL: b.URL}, ""
	}
	if b.CallbackData, msg = str("callback_data"); msg != "" {
		return nil, b, msg
	}
	if b.CallbackData != "" {
		return map[string]any{"text": b.Text, "callback_data": b.CallbackData}, b, ""
	}
	for _, k := range otherKinds {
		if v, ok := obj[k]; ok {
			return map[string]any{"text": b.Text, k: v}, Button{Text: b.Text}, ""
		}
	}
	return nil, b, "Text buttons are unallowed in the inline keyboard"
}

// query is a callback query the bot can answer once.
type query struct{ answered bool }

// queryBase makes callback query ids look like the real ones (decimal
// 64-bit numbers).
const queryBase = 4_000_000_000_000_000_000

var errQueryInvalid = badRequest("query is too old and response timeout expired or query ID is invalid")

// CallbackQuery builds the callback_query update of user userID (username
// may be "") pressing the inline button with callback_data data under
// message messageID of chat chatID, which the bot sent: {"callback_query":
// {"id","from","message","chat_instance","data"}}, the message as it stands
// now (edits applied; message_thread_id and is_topic_message in a topic;
// its reply_markup). Deliver it with Push or DeliverWebhook; the bot may
// then answer its id (u["callback_query"]["id"], a string) once.
func (s *Server) CallbackQuery(chatID, messageID, userID int64, username, data string) (Update, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chats[chatID]
	var b *botMsg
	if c != nil {
		b = c.bot[messageID]
	}
	if b == nil {
		return nil, fmt.Errorf("faketelegram: message %d of chat %d was not sent by the bot", messageID, chatID)
	}
	found := false
	for _, r := range b.kb.rows() {
		for _, btn := range r {
			found = found || btn.CallbackData == data && data != ""
		}
	}
	if !found {
		return nil, fmt.Errorf("faketelegram: message %d of chat %d has no button with callback_data %q",
			messageID, chatID, data)
	}
	s.querySeq++
	h := fnv.New64a()
	fmt.Fprintf(h, "%d:%d", s.opts.BotID, chatID)
	return Update{"callback_query": map[string]any{
		"id":            strconv.FormatInt(queryBase+s.querySeq, 10),
		"from":          user(userID, username),
		"message":       s.messageLocked(c, messageID),
		"chat_instance": strconv.FormatInt(int64(h.Sum64()), 10),
		"data":          data,
	}}, nil
}

// Press queues (as Push does) the update CallbackQuery builds and returns
// the callback query id.
func (s *Server) Press(chatID, messageID, userID int64, username, data string) (string, error) {
	u, err := s.CallbackQuery(chatID, messageID, userID, username, data)
	if err != nil {
		return "", err
	}
	s.Push(u)
	return u["callback_query"].(map[string]any)["id"].(string), nil
}

// answerCallbackQuery answers a callback query delivered to the bot, once.
func (s *Server) answerCallbackQuery(rq *request) (any, *apiError) {
	id := strings.TrimSpace(rq.p["callback_query_id"])
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queries[id]
	if q == nil || q.answered {
		return nil, errQueryInvalid
	}
	q.answered = true
	s.answers = append(s.answers, Answer{QueryID: id, Text: rq.p["text"], ShowAlert: rq.p.bool("show_alert"),
		URL: rq.p["url"], Params: maps.Clone(rq.p), At: time.Now()})
	broadcast(&s.eventCh)
	return true, nil
}

// Answers returns a copy of every recorded answerCallbackQuery, oldest first.
func (s *Server) Answers() []Answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.answers)
}

// WaitAnswered returns the answer to callback query id once the bot has
// answered it. On ctx expiry (or Close) it returns ctx.Err() (or ErrClosed).
func (s *Server) WaitAnswered(ctx context.Context, id string) (Answer, error) {
	var a Answer
	err := s.Wait(ctx, func() bool {
		for _, x := range s.Answers() {
			if x.QueryID == id {
				a = x
				return true
			}
		}
		return false
	})
	return a, err
}
