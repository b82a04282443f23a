package faketelegram

import (
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

// With a group budget on, a group's sends and edits, all its topics
// together, are refused past the budget with 429 and a retry_after up to
// the window; other groups and private chats are not affected.
func TestGroupBudgetRefusesPastTheBudget(t *testing.T) {
	s, bot := startWith(t, Options{Token: testToken, GroupBudget: Budget{Calls: 3, Window: time.Minute}})
	s.Push(s.TopicText(-100, 1, 7, "ann", "hi"))
	s.Push(s.TopicText(-100, 2, 7, "ann", "hi"))
	s.Push(s.GroupText(-200, 7, "ann", "hi"))
	inTopic := func(thread int64, text string) error {
		_, err := bot.MakeRequest("sendMessage", tgbotapi.Params{"chat_id": "-100", "message_thread_id": itoa(thread), "text": text})
		return err
	}
	if err := inTopic(1, "one"); err != nil {
		t.Fatal(err)
	}
	m, err := bot.Send(tgbotapi.NewMessage(-100, "two"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bot.Send(tgbotapi.NewEditMessageText(-100, m.MessageID, "two, edited")); err != nil {
		t.Fatal(err)
	}
	err = inTopic(2, "four")
	if e := tgErr(t, err); e.Code != 429 || e.RetryAfter < 1 || e.RetryAfter > 60 {
		t.Fatalf("the fourth call in a minute: %+v, want 429 with retry_after in 1..60", e)
	}
	if _, err := bot.Send(tgbotapi.NewMessage(-200, "another group")); err != nil {
		t.Errorf("another group was refused: %v", err)
	}
	if _, err := bot.Send(tgbotapi.NewMessage(42, "private")); err != nil {
		t.Errorf("a private chat was refused: %v", err)
	}
	calls := s.GroupCalls()
	if len(calls) != 5 || calls[3].RetryAfter == 0 || calls[2].Method != "editMessageText" || calls[4].ChatID != -200 {
		t.Errorf("recorded %+v, want the group's 3 calls, the refused one, the other group's", calls)
	}
}
