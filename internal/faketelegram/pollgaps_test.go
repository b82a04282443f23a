package faketelegram

import (
	"testing"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

func TestPollGapsAndConflicts(t *testing.T) {
	s, bot := start(t)
	if gaps := s.PollGaps(); len(gaps) != 0 {
		t.Fatalf("gaps before any poll: %+v", gaps)
	}
	getUpdates(t, bot, tgbotapi.Params{})
	getUpdates(t, bot, tgbotapi.Params{})
	// One closed gap between the polls, one open since the second.
	gaps := s.PollGaps()
	if len(gaps) != 2 {
		t.Fatalf("gaps after two polls: %+v", gaps)
	}
	for i, g := range gaps {
		if g.From.IsZero() || g.To.Before(g.From) || g.Duration() < 0 {
			t.Errorf("gap %d: %+v", i, g)
		}
	}
	if !gaps[1].From.After(gaps[0].To) && !gaps[1].From.Equal(gaps[0].To) {
		t.Errorf("gaps out of order: %+v", gaps)
	}

	// A held poll closes the open gap; a second poll kicks it: a conflict.
	ctx := guard(t)
	first := make(chan error, 1)
	go func() {
		_, err := bot.MakeRequest("getUpdates", tgbotapi.Params{"timeout": "30"})
		first <- err
	}()
	if err := s.WaitPolling(ctx); err != nil {
		t.Fatal(err)
	}
	if gaps := s.PollGaps(); len(gaps) != 2 {
		t.Fatalf("gaps while a poll is held: %+v", gaps)
	}
	if n := s.PollConflicts(); n != 0 {
		t.Fatalf("PollConflicts = %d before a second poller", n)
	}
	second := make(chan error, 1)
	go func() {
		_, err := bot.MakeRequest("getUpdates", tgbotapi.Params{"timeout": "30"})
		second <- err
	}()
	select {
	case err := <-first:
		if e := tgErr(t, err); e.Code != 409 {
			t.Fatalf("older poll: %+v", e)
		}
	case <-ctx.Done():
		t.Fatal("the older poll was not ended")
	}
	s.Push(s.PrivateText(7, "carol", "hi")) // answers the second poll
	select {
	case err := <-second:
		if err != nil {
			t.Fatalf("newer poll: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the newer poll was not answered")
	}
	if n := s.PollConflicts(); n != 1 {
		t.Fatalf("PollConflicts = %d, want 1", n)
	}
	if gaps := s.PollGaps(); len(gaps) != 3 {
		t.Fatalf("gaps after the overlapping polls: %+v", gaps)
	}
}
