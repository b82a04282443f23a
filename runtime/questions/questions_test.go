package questions

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/shipmyagent/ship/runtime/records"
	"github.com/shipmyagent/ship/runtime/turn"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func ask(t *testing.T, s *Store, anyone bool) Question {
	t.Helper()
	q, err := s.Ask(context.Background(), Question{
		ChatKey: "telegram:chat:-100:topic:7", Route: turn.Route{Channel: "telegram", ChatID: "-100", MessageThreadID: 7},
		Asked: "telegram:42", Anyone: anyone, Text: "Deploy where?", Choices: []string{"staging", "production", "nowhere"},
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// Of many taps racing on one question, exactly one becomes the answer;
// every other is told it was already answered, by whom.
func TestOneAnswerWinsARace(t *testing.T) {
	s := New(records.NewMemory(), nil)
	q := ask(t, s, false)
	var wg sync.WaitGroup
	var mu sync.Mutex
	won, refused := 0, 0
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := s.Answer(context.Background(), q.ID, 1+i%3, Answerer{Identity: "telegram:42", Name: "@al", ChatKey: q.ChatKey})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case errors.Is(err, ErrAnswered) && got.AnsweredBy == "telegram:42":
				refused++
			default:
				t.Errorf("tap: %v", err)
			}
		}()
	}
	wg.Wait()
	if won != 1 || refused != 15 {
		t.Fatalf("%d answers taken, %d refused; want 1 and 15", won, refused)
	}
}

// Only the person asked may answer, unless the question is for anyone in
// the chat; nobody answers from another chat or after it expired.
func TestWhoMayAnswer(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	s := New(records.NewMemory(), c.now)
	q := ask(t, s, false)
	if _, err := s.Answer(ctx, q.ID, 2, Answerer{Identity: "telegram:99", ChatKey: q.ChatKey}); !errors.Is(err, ErrNotAsked) {
		t.Fatalf("another member answered: %v", err)
	}
	if _, err := s.Answer(ctx, q.ID, 2, Answerer{Identity: "telegram:42", ChatKey: "telegram:chat:5"}); !errors.Is(err, ErrWrongChat) {
		t.Fatalf("answered from another chat: %v", err)
	}
	if _, err := s.Answer(ctx, q.ID, 4, Answerer{Identity: "telegram:42", ChatKey: q.ChatKey}); !errors.Is(err, ErrChoice) {
		t.Fatalf("choice 4 of 3: %v", err)
	}
	if _, err := s.Answer(ctx, "nope", 1, Answerer{Identity: "telegram:42"}); !errors.Is(err, ErrUnknown) {
		t.Fatalf("unknown id: %v", err)
	}

	open := ask(t, s, true)
	if _, err := s.Answer(ctx, open.ID, 1, Answerer{Identity: "api:ci", ChatKey: ""}); !errors.Is(err, ErrWrongChat) {
		t.Fatalf("anyone-question answered from outside the chat: %v", err)
	}
	got, err := s.Answer(ctx, open.ID, 3, Answerer{Identity: "telegram:99", Name: "@bo", ChatKey: open.ChatKey})
	if err != nil || got.Choice(got.Answer) != "nowhere" || got.ByName != "@bo" {
		t.Fatalf("anyone-question answered by a member: %+v %v", got, err)
	}

	c.add(DefaultTTL)
	if got, err := s.Answer(ctx, q.ID, 1, Answerer{Identity: "telegram:42", ChatKey: q.ChatKey}); !errors.Is(err, ErrExpired) || !got.Expires.Equal(q.Expires) {
		t.Fatalf("answered after 24 h: %v", err)
	}
	if list, err := s.Open(ctx, q.ChatKey); err != nil || len(list) != 0 {
		t.Fatalf("open questions after expiry: %v %v", list, err)
	}
}

// Bad questions are refused with the reason, and nothing is kept.
func TestAskRefusesBadQuestions(t *testing.T) {
	tab := records.NewMemory()
	s := New(tab, nil)
	for _, c := range []struct {
		text    string
		choices []string
		ttl     time.Duration
	}{
		{"", []string{"a", "b"}, 0},
		{"q", []string{"a"}, 0},
		{"q", []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}, 0},
		{"q", []string{"a", "A"}, 0},
		{"q", []string{"a", "two\nlines"}, 0},
		{"q", []string{"a", "b"}, 30 * 24 * time.Hour},
	} {
		if _, err := s.Ask(context.Background(), Question{ChatKey: "k", Text: c.text, Choices: c.choices}, c.ttl); err == nil {
			t.Errorf("asked %q %q (ttl %s)", c.text, c.choices, c.ttl)
		}
	}
	if recs, _ := tab.List(context.Background()); len(recs) != 0 {
		t.Fatalf("refused questions were kept: %d", len(recs))
	}
}

// A question asked before a restart is answered once after it.
func TestAQuestionOutlivesARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "questions.json")
	f, err := records.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	q := ask(t, New(f, nil), false)
	g, err := records.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := New(g, nil)
	if _, err := s.Answer(context.Background(), q.ID, 2, Answerer{Identity: "telegram:42", ChatKey: q.ChatKey}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Answer(context.Background(), q.ID, 2, Answerer{Identity: "telegram:42", ChatKey: q.ChatKey}); !errors.Is(err, ErrAnswered) {
		t.Fatalf("second answer: %v", err)
	}
}
