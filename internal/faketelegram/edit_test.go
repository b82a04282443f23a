package faketelegram

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

const notModified = "Bad Request: message is not modified: specified new message content and reply markup are " +
	"exactly the same as a current content and reply markup of the message"

func TestEditMessageText(t *testing.T) {
	s, bot := start(t)
	cfg := tgbotapi.NewMessage(42, "Thinking")
	cfg.ReplyMarkup = approval()
	msg, err := bot.Send(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mid := msg.MessageID

	// Editing the text without reply_markup removes the keyboard, as Telegram does.
	edited, err := bot.Send(tgbotapi.NewEditMessageText(42, mid, "Thinking…"))
	if err != nil {
		t.Fatal(err)
	}
	if edited.MessageID != mid || edited.Text != "Thinking…" || edited.EditDate == 0 || edited.ReplyMarkup != nil ||
		edited.From == nil || !edited.From.IsBot {
		t.Fatalf("edited message %+v", edited)
	}
	// Same text, same (no) keyboard: not modified, and nothing is recorded.
	_, err = bot.Send(tgbotapi.NewEditMessageText(42, mid, "Thinking…"))
	if e := tgErr(t, err); e.Code != 400 || e.Message != notModified {
		t.Fatalf("identical edit: %+v", e)
	}
	// Surrounding white space is not content; markup that formats is.
	if _, err := bot.Send(tgbotapi.NewEditMessageText(42, mid, " Thinking… \n")); tgErr(t, err).Message != notModified {
		t.Fatal("white space made a modification")
	}
	bold := tgbotapi.NewEditMessageText(42, mid, "*Thinking…*")
	bold.ParseMode = "MarkdownV2"
	if m, err := bot.Send(bold); err != nil || m.Text != "Thinking…" {
		t.Fatalf("formatted edit: %+v %v", m, err)
	}
	// The same text with a keyboard is a modification; then only the keyboard changes.
	final := tgbotapi.NewEditMessageTextAndMarkup(42, mid, "Done", approval())
	if m, err := bot.Send(final); err != nil || m.ReplyMarkup == nil || len(m.ReplyMarkup.InlineKeyboard) != 2 {
		t.Fatalf("edit with a keyboard: %+v %v", m, err)
	}
	if _, err := bot.Send(final); tgErr(t, err).Message != notModified {
		t.Fatal("identical text and keyboard made a modification")
	}

	edits := s.Edits()
	if len(edits) != 3 || edits[0].Method != "editMessageText" || edits[0].ChatID != 42 || edits[0].MessageID != int64(mid) ||
		edits[0].Text != "Thinking…" || edits[0].Buttons != nil || edits[1].ParseMode != "MarkdownV2" ||
		!reflect.DeepEqual(edits[2].Buttons, approvalButtons) || edits[2].At.IsZero() {
		t.Fatalf("Edits %+v", edits)
	}
	m, ok := s.Message(42, int64(mid))
	if !ok || m.Text != "Done" || m.Source != "Done" || m.Edits != 3 || !reflect.DeepEqual(m.Buttons, approvalButtons) {
		t.Fatalf("Message %+v", m)
	}
	// Sent keeps the message as first sent.
	if sent := s.Sent(); len(sent) != 1 || sent[0].Text != "Thinking" {
		t.Fatalf("Sent %+v", sent)
	}
}

func TestEditMessageTextErrors(t *testing.T) {
	s, bot := start(t)
	u := s.TopicText(-1001, 7, 42, "alice", "question")
	s.Push(u)
	resp, err := bot.MakeRequest("sendMessage", tgbotapi.Params{"chat_id": "-1001", "message_thread_id": "7", "text": "answer"})
	if err != nil {
		t.Fatal(err)
	}
	var sent struct {
		MessageID int64 `json:"message_id"`
	}
	_ = json.Unmarshal(resp.Result, &sent)
	photo, err := bot.Send(tgbotapi.NewPhoto(-1001, tgbotapi.FileBytes{Name: "p.png", Bytes: PNG(1, 1)}))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		p    tgbotapi.Params
		desc string
	}{
		{tgbotapi.Params{"chat_id": "-1001", "message_id": "999", "text": "x"}, "Bad Request: message to edit not found"},
		{tgbotapi.Params{"chat_id": "-5", "message_id": "1", "text": "x"}, "Bad Request: message to edit not found"},
		{tgbotapi.Params{"chat_id": "-1001", "message_id": "8", "text": "x"}, "Bad Request: message can't be edited"},
		{tgbotapi.Params{"chat_id": "-1001", "message_id": itoa(int64(photo.MessageID)), "text": "x"},
			"Bad Request: there is no text in the message to edit"},
		{tgbotapi.Params{"chat_id": "-1001", "text": "x"}, "Bad Request: message identifier is not specified"},
		{tgbotapi.Params{"text": "x"}, "Bad Request: message identifier is not specified"},
		{tgbotapi.Params{"inline_message_id": "AAA", "text": "x"}, "Bad Request: MESSAGE_ID_INVALID"},
		{tgbotapi.Params{"chat_id": "-1001", "message_id": itoa(sent.MessageID), "text": " "}, "Bad Request: message text is empty"},
		{tgbotapi.Params{"chat_id": "-1001", "message_id": itoa(sent.MessageID), "text": strings.Repeat("a", 4097)},
			"Bad Request: message is too long"},
		{tgbotapi.Params{"chat_id": "-1001", "message_id": itoa(sent.MessageID), "text": "a.b", "parse_mode": "MarkdownV2"},
			`Bad Request: can't parse entities: Character '.' is reserved and must be escaped with the preceding '\'`},
		{tgbotapi.Params{"chat_id": "-1001", "message_id": itoa(sent.MessageID), "text": "x", "reply_markup": `{"inline_keyboard":[[{"text":"x"}]]}`},
			"Bad Request: can't parse inline keyboard button: Text buttons are unallowed in the inline keyboard"},
	}
	for _, c := range cases {
		_, err := bot.MakeRequest("editMessageText", c.p)
		if e := tgErr(t, err); e.Code != 400 || e.Message != c.desc {
			t.Errorf("%v: %+v, want %q", c.p, e, c.desc)
		}
	}
	// In a topic, message_thread_id is not needed and the message stays in its topic.
	resp, err = bot.MakeRequest("editMessageText", tgbotapi.Params{"chat_id": "-1001", "message_id": itoa(sent.MessageID),
		"text": "better answer"})
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		MessageThreadID int64 `json:"message_thread_id"`
		IsTopicMessage  bool  `json:"is_topic_message"`
		ReplyTo         struct {
			MessageID int64 `json:"message_id"`
		} `json:"reply_to_message"`
	}
	if err := json.Unmarshal(resp.Result, &out); err != nil || out.MessageThreadID != 7 || !out.IsTopicMessage ||
		out.ReplyTo.MessageID != 7 {
		t.Fatalf("edited topic message %s", resp.Result)
	}
	if len(s.Edits()) != 1 {
		t.Fatalf("failed edits recorded: %+v", s.Edits())
	}
}

func TestEditMessageReplyMarkup(t *testing.T) {
	s, bot := start(t)
	cfg := tgbotapi.NewMessage(42, "Approve?")
	cfg.ReplyMarkup = approval()
	msg, err := bot.Send(cfg)
	if err != nil {
		t.Fatal(err)
	}
	same := tgbotapi.NewEditMessageReplyMarkup(42, msg.MessageID, approval())
	if _, err := bot.Send(same); tgErr(t, err).Message != notModified {
		t.Fatal("the same keyboard made a modification")
	}
	one := tgbotapi.NewInlineKeyboardMarkup(tgbotapi.NewInlineKeyboardRow(tgbotapi.NewInlineKeyboardButtonData("Undo", "undo:1")))
	m, err := bot.Send(tgbotapi.NewEditMessageReplyMarkup(42, msg.MessageID, one))
	if err != nil || m.Text != "Approve?" || m.EditDate != 0 || m.ReplyMarkup == nil || len(m.ReplyMarkup.InlineKeyboard) != 1 {
		t.Fatalf("new keyboard: %+v %v", m, err)
	}
	// Removing the buttons after a decision: no reply_markup at all (tgbotapi's nil
	// ReplyMarkup), or an empty inline keyboard.
	remove := tgbotapi.EditMessageReplyMarkupConfig{BaseEdit: tgbotapi.BaseEdit{ChatID: 42, MessageID: msg.MessageID}}
	if m, err := bot.Send(remove); err != nil || m.ReplyMarkup != nil {
		t.Fatalf("removing the keyboard: %+v %v", m, err)
	}
	if _, err := bot.Send(remove); tgErr(t, err).Message != notModified {
		t.Fatal("removing no keyboard made a modification")
	}
	_, err = bot.MakeRequest("editMessageReplyMarkup", tgbotapi.Params{"chat_id": "42", "message_id": itoa(int64(msg.MessageID)),
		"reply_markup": `{"inline_keyboard":[]}`})
	if tgErr(t, err).Message != notModified {
		t.Fatal("an empty keyboard is no keyboard")
	}
	edits := s.Edits()
	if len(edits) != 2 || edits[0].Method != "editMessageReplyMarkup" || edits[0].Text != "" ||
		!reflect.DeepEqual(edits[0].Buttons, [][]Button{{{Text: "Undo", CallbackData: "undo:1"}}}) || edits[1].Buttons != nil {
		t.Fatalf("Edits %+v", edits)
	}
	if cur, _ := s.Message(42, int64(msg.MessageID)); cur.Buttons != nil || cur.Text != "Approve?" {
		t.Fatalf("Message %+v", cur)
	}
	// Buttons that are gone cannot be pressed.
	if _, err := s.Press(42, int64(msg.MessageID), 42, "alice", "ok:1"); err == nil {
		t.Fatal("pressed a removed button")
	}
}
