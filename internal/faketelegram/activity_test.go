package faketelegram

import (
	"context"
	"errors"
	"strings"
	"testing"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

func TestChatActions(t *testing.T) {
	s, bot := start(t)
	if _, err := bot.Request(tgbotapi.NewChatAction(42, tgbotapi.ChatTyping)); err != nil {
		t.Fatal(err)
	}
	if _, err := bot.MakeRequest("sendChatAction", tgbotapi.Params{"chat_id": "-1001", "action": "TYPING",
		"message_thread_id": "7"}); err != nil {
		t.Fatal(err)
	}
	_, err := bot.Request(tgbotapi.NewChatAction(42, "dancing"))
	if e := tgErr(t, err); e.Code != 400 || e.Message != "Bad Request: wrong parameter action in request" {
		t.Fatalf("bad action: %+v", e)
	}
	acts := s.ChatActions()
	if len(acts) != 2 || acts[0].ChatID != 42 || acts[0].Action != "typing" || acts[0].ThreadID != 0 ||
		acts[1].ChatID != -1001 || acts[1].ThreadID != 7 || acts[1].Action != "TYPING" || acts[0].At.IsZero() {
		t.Fatalf("ChatActions %+v", acts)
	}
	if len(s.Sent()) != 0 {
		t.Fatal("a chat action was recorded as a send")
	}
}

func TestSendMessageDraft(t *testing.T) {
	s, bot := start(t)
	s.Push(s.PrivateText(42, "alice", "hi"))
	s.Push(s.GroupText(-100, 42, "alice", "hi"))
	for i, text := range []string{"Hel", "Hello, wor", "Hello, *world*"} {
		p := tgbotapi.Params{"chat_id": "42", "draft_id": "7", "text": text}
		if i == 2 {
			p["parse_mode"] = "MarkdownV2"
			p["message_thread_id"] = "3"
		}
		resp, err := bot.MakeRequest("sendMessageDraft", p)
		if err != nil || string(resp.Result) != "true" {
			t.Fatalf("draft %d: %v %s", i, err, resp.Result)
		}
	}
	cases := []struct {
		p    tgbotapi.Params
		desc string
	}{
		{tgbotapi.Params{"chat_id": "-100", "draft_id": "7", "text": "x"}, "Bad Request: TEXTDRAFT_PEER_INVALID"},
		{tgbotapi.Params{"chat_id": "42", "text": "x"}, "Bad Request: draft_id must be non-zero"},
		{tgbotapi.Params{"chat_id": "42", "draft_id": "0", "text": "x"}, "Bad Request: draft_id must be non-zero"},
		{tgbotapi.Params{"chat_id": "42", "draft_id": "7", "text": ""}, "Bad Request: message text is empty"},
		{tgbotapi.Params{"chat_id": "42", "draft_id": "7", "text": strings.Repeat("a", 4097)}, "Bad Request: message is too long"},
		{tgbotapi.Params{"chat_id": "42", "draft_id": "7", "text": "a.", "parse_mode": "MarkdownV2"},
			`Bad Request: can't parse entities: Character '.' is reserved and must be escaped with the preceding '\'`},
		{tgbotapi.Params{"draft_id": "7", "text": "x"}, "Bad Request: chat_id is empty"},
	}
	for _, c := range cases {
		_, err := bot.MakeRequest("sendMessageDraft", c.p)
		if e := tgErr(t, err); e.Code != 400 || e.Message != c.desc {
			t.Errorf("%v: %+v, want %q", c.p, e, c.desc)
		}
	}
	drafts := s.Drafts()
	if len(drafts) != 3 || drafts[0].ChatID != 42 || drafts[0].DraftID != 7 || drafts[0].Text != "Hel" ||
		drafts[2].Text != "Hello, *world*" || drafts[2].ParseMode != "MarkdownV2" || drafts[2].ThreadID != 3 {
		t.Fatalf("Drafts %+v", drafts)
	}
	if len(s.Sent()) != 0 {
		t.Fatal("a draft was recorded as a sent message")
	}
}

func TestWait(t *testing.T) {
	s, bot := start(t)
	ctx := guard(t)
	done := make(chan error, 1)
	go func() {
		done <- s.Wait(ctx, func() bool { return len(s.ChatActions()) >= 2 && len(s.Drafts()) >= 1 })
	}()
	for _, p := range []tgbotapi.Params{{"chat_id": "42", "action": "typing"}, {"chat_id": "42", "action": "typing"}} {
		if _, err := bot.MakeRequest("sendChatAction", p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := bot.MakeRequest("sendMessageDraft", tgbotapi.Params{"chat_id": "42", "draft_id": "1", "text": "x"}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Wait(cancelled, func() bool { return false }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on a cancelled context: %v", err)
	}
	s.Close()
	if err := s.Wait(ctx, func() bool { return false }); !errors.Is(err, ErrClosed) {
		t.Fatalf("Wait after Close: %v", err)
	}
}
