package faketelegram

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

// approval is a keyboard with two callback buttons and a URL button.
func approval() tgbotapi.InlineKeyboardMarkup {
	return tgbotapi.NewInlineKeyboardMarkup(
		tgbotapi.NewInlineKeyboardRow(tgbotapi.NewInlineKeyboardButtonData("Approve", "ok:1"),
			tgbotapi.NewInlineKeyboardButtonData("Deny", "no:1")),
		tgbotapi.NewInlineKeyboardRow(tgbotapi.NewInlineKeyboardButtonURL("Docs", "https://example.com/d")))
}

var approvalButtons = [][]Button{{{Text: "Approve", CallbackData: "ok:1"}, {Text: "Deny", CallbackData: "no:1"}},
	{{Text: "Docs", URL: "https://example.com/d"}}}

func TestInlineKeyboardRecorded(t *testing.T) {
	s, bot := start(t)
	cfg := tgbotapi.NewMessage(42, "Run rm -rf build?")
	cfg.ReplyMarkup = approval()
	msg, err := bot.Send(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if msg.ReplyMarkup == nil || len(msg.ReplyMarkup.InlineKeyboard) != 2 ||
		*msg.ReplyMarkup.InlineKeyboard[0][1].CallbackData != "no:1" || *msg.ReplyMarkup.InlineKeyboard[1][0].URL != "https://example.com/d" {
		t.Fatalf("returned reply_markup %+v", msg.ReplyMarkup)
	}
	sent := s.Sent()
	if len(sent) != 1 || !reflect.DeepEqual(sent[0].Buttons, approvalButtons) {
		t.Fatalf("Sent.Buttons %+v", sent[0].Buttons)
	}
	m, ok := s.Message(42, int64(msg.MessageID))
	if !ok || !reflect.DeepEqual(m.Buttons, approvalButtons) || m.Text != "Run rm -rf build?" || m.Edits != 0 {
		t.Fatalf("Message %+v %v", m, ok)
	}
	// Without a keyboard, and with markups that attach none.
	for _, markup := range []string{"", `{"inline_keyboard":[]}`, `{"inline_keyboard":[[]]}`, `{"remove_keyboard":true}`} {
		resp, err := bot.MakeRequest("sendMessage", tgbotapi.Params{"chat_id": "42", "text": "plain", "reply_markup": markup})
		if err != nil || strings.Contains(string(resp.Result), "reply_markup") {
			t.Fatalf("%q: %v %s", markup, err, resp.Result)
		}
	}
	for _, x := range s.Sent()[1:] {
		if x.Buttons != nil {
			t.Fatalf("buttons recorded for %q", x.Params["reply_markup"])
		}
	}
	// A JSON body carries reply_markup as an object.
	code, body := do(t, "POST", s.URL()+"/bot"+testToken+"/sendMessage", "application/json",
		`{"chat_id":42,"text":"json","reply_markup":{"inline_keyboard":[[{"text":"A","callback_data":"a"}]]}}`)
	if code != 200 || !strings.Contains(body, `"reply_markup":{"inline_keyboard":[[{"callback_data":"a","text":"A"}]]}`) {
		t.Fatalf("JSON body: %d %s", code, body)
	}
	if b := s.Sent()[5].Buttons; !reflect.DeepEqual(b, [][]Button{{{Text: "A", CallbackData: "a"}}}) {
		t.Fatalf("JSON body buttons %+v", b)
	}
}

func TestInlineKeyboardValidation(t *testing.T) {
	s, bot := start(t)
	kb := func(buttons string) string { return `{"inline_keyboard":[[` + buttons + `]]}` }
	cases := []struct{ markup, desc string }{
		{kb(`{"text":"x","callback_data":"` + strings.Repeat("a", 65) + `"}`), "Bad Request: BUTTON_DATA_INVALID"},
		{kb(`{"text":"x","callback_data":"` + strings.Repeat("я", 33) + `"}`), "Bad Request: BUTTON_DATA_INVALID"},
		{kb(`{"text":"x","callback_data":""}`), "Bad Request: can't parse inline keyboard button: Text buttons are unallowed in the inline keyboard"},
		{kb(`{"text":"x"}`), "Bad Request: can't parse inline keyboard button: Text buttons are unallowed in the inline keyboard"},
		{kb(`{"text":"","callback_data":"a"}`), "Bad Request: BUTTON_TEXT_INVALID"},
		{kb(`{"callback_data":"a"}`), `Bad Request: can't parse inline keyboard button: Can't find field "text"`},
		{kb(`{"text":1,"callback_data":"a"}`), `Bad Request: can't parse inline keyboard button: Field "text" must be of type String`},
		{kb(`"a"`), "Bad Request: can't parse inline keyboard button: InlineKeyboardButton must be an Object"},
		// The Bot API parses every button before Telegram checks any.
		{kb(`{"text":"x","callback_data":"` + strings.Repeat("a", 65) + `"},{"text":"y"}`),
			"Bad Request: can't parse inline keyboard button: Text buttons are unallowed in the inline keyboard"},
		{`{"inline_keyboard":{}}`, `Bad Request: field "inline_keyboard" of the InlineKeyboardMarkup must be an Array`},
		{`{"inline_keyboard":[{}]}`, `Bad Request: field "inline_keyboard" of the InlineKeyboardMarkup must be an Array of Arrays`},
		{`[1]`, "Bad Request: object expected as reply markup"},
		{`{"inline_keyboard":`, "Bad Request: can't parse reply keyboard markup JSON object"},
	}
	for _, c := range cases {
		_, err := bot.MakeRequest("sendMessage", tgbotapi.Params{"chat_id": "42", "text": "t", "reply_markup": c.markup})
		if e := tgErr(t, err); e.Code != 400 || e.Message != c.desc {
			t.Errorf("%s: %+v, want %q", c.markup, e, c.desc)
		}
	}
	// The client's own empty callback_data is refused the same way.
	cfg := tgbotapi.NewMessage(42, "t")
	cfg.ReplyMarkup = tgbotapi.NewInlineKeyboardMarkup(tgbotapi.NewInlineKeyboardRow(tgbotapi.NewInlineKeyboardButtonData("x", "")))
	if _, err := bot.Send(cfg); tgErr(t, err).Code != 400 {
		t.Fatal("empty callback_data accepted")
	}
	if len(s.Sent()) != 0 {
		t.Fatalf("refused sends recorded: %+v", s.Sent())
	}
	// 64 bytes, counted in bytes (32 Cyrillic letters); other kinds of buttons pass.
	for _, ok := range []string{kb(`{"text":"x","callback_data":"` + strings.Repeat("a", 64) + `"}`),
		kb(`{"text":"x","callback_data":"` + strings.Repeat("я", 32) + `"}`),
		kb(`{"text":"x","url":"","callback_data":"a"}`), kb(`{"text":"x","copy_text":{"text":"c"}}`)} {
		if _, err := bot.MakeRequest("sendMessage", tgbotapi.Params{"chat_id": "42", "text": "t", "reply_markup": ok}); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	if b := s.Sent()[3].Buttons; !reflect.DeepEqual(b, [][]Button{{{Text: "x"}}}) {
		t.Fatalf("copy_text button %+v", b)
	}
}

// topicMessage sends a message with the approval keyboard into topic 7 of
// forum -1001 and returns its message_id.
func topicMessage(t *testing.T, s *Server, bot *tgbotapi.BotAPI) int64 {
	t.Helper()
	s.Push(s.TopicText(-1001, 7, 42, "alice", "deploy?"))
	markup, _ := json.Marshal(approval())
	resp, err := bot.MakeRequest("sendMessage", tgbotapi.Params{"chat_id": "-1001", "message_thread_id": "7",
		"text": "Deploy to prod?", "reply_to_message_id": "8", "reply_markup": string(markup)})
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		MessageID int64 `json:"message_id"`
	}
	if err := json.Unmarshal(resp.Result, &m); err != nil {
		t.Fatal(err)
	}
	return m.MessageID
}

func TestPressAndAnswer(t *testing.T) {
	s, bot := start(t)
	ctx := guard(t)
	mid := topicMessage(t, s, bot) // update 1
	id, err := s.Press(-1001, mid, 43, "bob", "ok:1")
	if err != nil {
		t.Fatal(err)
	}
	raws, ups := getUpdates(t, bot, tgbotapi.Params{"offset": "2"})
	if len(ups) != 1 || ups[0].CallbackQuery == nil {
		t.Fatalf("updates %s", raws)
	}
	cq := ups[0].CallbackQuery
	if cq.ID != id || cq.Data != "ok:1" || cq.From.ID != 43 || cq.From.UserName != "bob" || cq.ChatInstance == "" ||
		cq.Message == nil || int64(cq.Message.MessageID) != mid || cq.Message.Chat.ID != -1001 || !cq.Message.From.IsBot ||
		cq.Message.Text != "Deploy to prod?" || cq.Message.ReplyToMessage == nil || cq.Message.ReplyToMessage.MessageID != 8 ||
		cq.Message.ReplyMarkup == nil || *cq.Message.ReplyMarkup.InlineKeyboard[0][0].CallbackData != "ok:1" {
		t.Fatalf("callback_query %s", raws[0])
	}
	var wire struct {
		UpdateID      int64                      `json:"update_id"`
		CallbackQuery map[string]json.RawMessage `json:"callback_query"`
	}
	var topic struct {
		MessageThreadID int64 `json:"message_thread_id"`
		IsTopicMessage  bool  `json:"is_topic_message"`
	}
	if err := json.Unmarshal(raws[0], &wire); err != nil || json.Unmarshal(wire.CallbackQuery["message"], &topic) != nil {
		t.Fatal(err)
	}
	keys := slices.Sorted(maps.Keys(wire.CallbackQuery))
	if wire.UpdateID == 0 || !slices.Equal(keys, []string{"chat_instance", "data", "from", "id", "message"}) ||
		topic.MessageThreadID != 7 || !topic.IsTopicMessage {
		t.Fatalf("wire callback_query %s", raws[0])
	}

	// The answer is awaited, recorded, and allowed once.
	answered := make(chan Answer, 1)
	go func() {
		a, err := s.WaitAnswered(ctx, id)
		if err != nil {
			t.Error(err)
		}
		answered <- a
	}()
	if _, err := bot.Request(tgbotapi.NewCallbackWithAlert(id, "Approved")); err != nil {
		t.Fatal(err)
	}
	if a := <-answered; a.QueryID != id || a.Text != "Approved" || !a.ShowAlert || a.At.IsZero() {
		t.Fatalf("answer %+v", a)
	}
	const invalid = "Bad Request: query is too old and response timeout expired or query ID is invalid"
	for _, qid := range []string{id, "12345", ""} {
		_, err := bot.Request(tgbotapi.NewCallback(qid, ""))
		if e := tgErr(t, err); e.Code != 400 || e.Message != invalid {
			t.Fatalf("answering %q: %+v", qid, e)
		}
	}
	if a := s.Answers(); len(a) != 1 {
		t.Fatalf("Answers %+v", a)
	}
	// Another press makes another query; both ids differ.
	id2, err := s.Press(-1001, mid, 42, "", "no:1")
	if err != nil || id2 == id {
		t.Fatalf("second press %q %v", id2, err)
	}
	if _, err := bot.Request(tgbotapi.NewCallback(id2, "")); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.WaitAnswered(cancelled, "never"); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitAnswered on a cancelled context: %v", err)
	}
}

func TestPressErrors(t *testing.T) {
	s, bot := start(t)
	mid := topicMessage(t, s, bot)
	for _, c := range []struct {
		chat, msg int64
		data      string
	}{{-1001, mid, "nope"}, {-1001, mid, ""}, {-1001, 8, "ok:1"}, {-1001, 999, "ok:1"}, {5, mid, "ok:1"}} {
		if _, err := s.Press(c.chat, c.msg, 42, "alice", c.data); err == nil {
			t.Errorf("Press(%d, %d, %q) succeeded", c.chat, c.msg, c.data)
		}
	}
	// A callback_query pushed by hand is answerable too.
	s.Push(Update{"callback_query": map[string]any{"id": "77", "from": user(42, "alice"), "chat_instance": "1",
		"data": "raw"}})
	if _, err := bot.Request(tgbotapi.NewCallback("77", "")); err != nil {
		t.Fatal(err)
	}
}

func TestCallbackQueriesFollowAllowedUpdates(t *testing.T) {
	s, bot := start(t)
	mid := topicMessage(t, s, bot)
	if list, sent := s.AllowedUpdates(); list != nil || sent {
		t.Fatalf("AllowedUpdates before any: %v %v", list, sent)
	}
	kinds := func(p tgbotapi.Params) []string {
		t.Helper()
		raws, _ := getUpdates(t, bot, p)
		var out []string
		for _, r := range raws {
			var m map[string]json.RawMessage
			_ = json.Unmarshal(r, &m)
			for k := range m {
				if k != "update_id" {
					out = append(out, k)
				}
			}
		}
		return out
	}
	press := func() {
		t.Helper()
		if _, err := s.Press(-1001, mid, 42, "alice", "ok:1"); err != nil {
			t.Fatal(err)
		}
	}
	press()
	// ship's own list: callback queries are dropped.
	if got := kinds(tgbotapi.Params{"allowed_updates": `["message","edited_message"]`}); !slices.Equal(got, []string{"message"}) {
		t.Fatalf("with message only: %v", got)
	}
	if list, sent := s.AllowedUpdates(); !slices.Equal(list, []string{"message", "edited_message"}) || !sent {
		t.Fatalf("AllowedUpdates %v %v", list, sent)
	}
	press()
	// Not sent (or "null", as tgbotapi's UpdateConfig sends it): the previous setting holds.
	if got := kinds(tgbotapi.Params{"offset": "-1"}); len(got) != 0 {
		t.Fatalf("without allowed_updates: %v", got)
	}
	press()
	if got := kinds(tgbotapi.Params{"allowed_updates": "null"}); len(got) != 0 {
		t.Fatalf("with null: %v", got)
	}
	if list, _ := s.AllowedUpdates(); len(list) != 2 {
		t.Fatalf("null changed AllowedUpdates: %v", list)
	}
	press()
	if got := kinds(tgbotapi.Params{"allowed_updates": `["Callback_Query"]`}); !slices.Equal(got, []string{"callback_query"}) {
		t.Fatalf("asked for callback_query: %v", got)
	}
	// An empty list (or one with no known name) is the default set, which has callback_query.
	for _, list := range []string{`[]`, `["no_such_update"]`} {
		press()
		if got := kinds(tgbotapi.Params{"allowed_updates": list, "offset": "-1"}); !slices.Equal(got, []string{"callback_query"}) {
			t.Fatalf("%s: %v", list, got)
		}
	}
	if list, sent := s.AllowedUpdates(); !slices.Equal(list, []string{"no_such_update"}) || !sent {
		t.Fatalf("AllowedUpdates last %v %v", list, sent)
	}
}
