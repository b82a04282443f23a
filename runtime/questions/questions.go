// Package questions keeps the questions with choices the agent asks in
// chats (the ask tool) until someone answers them or they expire.
//
// A question is answered at most once, wherever the answer comes from (a
// button press on any platform, a number typed in the chat, the console,
// the API, any replica of a cluster): the answer is a compare-and-swap on
// the question's record, so of two taps racing only one becomes a turn,
// and a second tap is told who answered. That is the whole reason the
// questions live in a records.Table rather than in the run that asked:
// the run has ended long before the person taps.
package questions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/records"
	"github.com/shipmyagent/ship/runtime/turn"
)

// Limits of a question.
const (
	MinChoices = 2
	MaxChoices = 8
	// MaxChoiceChars bounds a choice's label: a button shows about this
	// much, and a longer label is a sentence the question should hold.
	MaxChoiceChars = 64
	MaxTextChars   = 2000
	// DefaultTTL is how long a question takes answers unless the asker
	// says otherwise; MaxTTL bounds what it may say.
	DefaultTTL = 24 * time.Hour
	MinTTL     = time.Minute
	MaxTTL     = 7 * 24 * time.Hour
	// keepAnswered is how long an answered or expired question is kept,
	// so a late tap is told what became of it rather than "unknown".
	keepAnswered = 7 * 24 * time.Hour
)

// Errors of Answer; callers branch on them with errors.Is.
var (
	ErrUnknown   = errors.New("no such question")
	ErrAnswered  = errors.New("the question was already answered")
	ErrExpired   = errors.New("the question has expired")
	ErrNotAsked  = errors.New("the question was asked of someone else")
	ErrWrongChat = errors.New("the question was asked in another chat")
	ErrChoice    = errors.New("no such choice")
)

// Question is one question, as kept.
type Question struct {
	ID      string `json:"id"`
	ChatKey string `json:"chatKey"`
	// Route is where it was asked: the chat, topic and the message the
	// asking run answered. The answer's turn goes there.
	Route turn.Route `json:"route"`
	// Asked is the identity of the person asked ("telegram:42"); only
	// they may answer unless Anyone.
	Asked   string    `json:"asked"`
	Anyone  bool      `json:"anyone,omitempty"`
	Text    string    `json:"text"`
	Choices []string  `json:"choices"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`

	// Answer is the chosen choice, from 1; 0 while unanswered.
	Answer     int       `json:"answer,omitempty"`
	AnsweredBy string    `json:"answeredBy,omitempty"` // an identity
	ByName     string    `json:"byName,omitempty"`     // how the chat names them
	AnsweredAt time.Time `json:"answeredAt,omitzero"`
}

// Choice is the label of the answer (or of choice n, from 1).
func (q Question) Choice(n int) string {
	if n < 1 || n > len(q.Choices) {
		return ""
	}
	return q.Choices[n-1]
}

// Shown is the question as a chat, an event or the console shows it.
func (q Question) Shown() dispatch.Question {
	return dispatch.Question{ID: q.ID, ChatKey: q.ChatKey, Text: q.Text, Choices: q.Choices, Anyone: q.Anyone, Expires: q.Expires.UnixMilli()}
}

// Answerer is who answers: their identity, how the chat names them and
// the chat the answer came from ("" from outside any chat).
type Answerer struct {
	Identity string
	Name     string
	ChatKey  string
}

// Store keeps questions in a records.Table (a file of their own when ship
// runs alone, the cluster's shared table otherwise).
type Store struct {
	t   records.Table
	now func() time.Time
}

// New returns a store over t; now is the clock (nil: time.Now).
func New(t records.Table, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{t: t, now: now}
}

// Check validates what the asker gives: the text, 2–8 distinct choices
// within MaxChoiceChars, a TTL within bounds (0: DefaultTTL). It returns
// the TTL to use.
func Check(text string, choices []string, ttl time.Duration) (time.Duration, error) {
	text = strings.TrimSpace(text)
	switch {
	case text == "":
		return 0, errors.New("the question is empty")
	case !utf8.ValidString(text):
		return 0, errors.New("the question is not valid UTF-8")
	case utf8.RuneCountInString(text) > MaxTextChars:
		return 0, fmt.Errorf("the question is over %d characters", MaxTextChars)
	case len(choices) < MinChoices || len(choices) > MaxChoices:
		return 0, fmt.Errorf("a question takes %d to %d choices, not %d", MinChoices, MaxChoices, len(choices))
	}
	seen := map[string]bool{}
	for i, c := range choices {
		c = strings.TrimSpace(c)
		switch {
		case c == "":
			return 0, fmt.Errorf("choice %d is empty", i+1)
		case !utf8.ValidString(c) || strings.ContainsAny(c, "\n\r"):
			return 0, fmt.Errorf("choice %d must be one line of valid UTF-8", i+1)
		case utf8.RuneCountInString(c) > MaxChoiceChars:
			return 0, fmt.Errorf("choice %d is over %d characters; put the detail in the question", i+1, MaxChoiceChars)
		case seen[strings.ToLower(c)]:
			return 0, fmt.Errorf("choice %d repeats another", i+1)
		}
		seen[strings.ToLower(c)] = true
	}
	switch {
	case ttl == 0:
		return DefaultTTL, nil
	case ttl < MinTTL || ttl > MaxTTL:
		return 0, fmt.Errorf("a question may stay open from %s to %s, not %s", MinTTL, MaxTTL, ttl)
	}
	return ttl, nil
}

// Ask keeps a new question: q's text, choices, route, asked and anyone;
// ttl as Check allows. It returns the question with its ID and times.
func (s *Store) Ask(ctx context.Context, q Question, ttl time.Duration) (Question, error) {
	ttl, err := Check(q.Text, q.Choices, ttl)
	if err != nil {
		return Question{}, err
	}
	q.Text = strings.TrimSpace(q.Text)
	q.Choices = slices.Clone(q.Choices)
	for i := range q.Choices {
		q.Choices[i] = strings.TrimSpace(q.Choices[i])
	}
	q.Created = s.now().UTC()
	q.Expires = q.Created.Add(ttl)
	q.Answer, q.AnsweredBy, q.ByName, q.AnsweredAt = 0, "", "", time.Time{}
	s.prune(ctx)
	for range 5 {
		q.ID = records.Code(6)
		raw, err := json.Marshal(q)
		if err != nil {
			return Question{}, fmt.Errorf("keeping a question: %w", err)
		}
		if _, err := s.t.Put(ctx, q.ID, raw, 0); errors.Is(err, records.ErrConflict) {
			continue // the id is taken: draw another
		} else if err != nil {
			return Question{}, fmt.Errorf("keeping a question: %w", err)
		}
		return q, nil
	}
	return Question{}, errors.New("keeping a question: no free id")
}

// Get returns the question id (any case).
func (s *Store) Get(ctx context.Context, id string) (Question, error) {
	r, err := s.t.Get(ctx, normID(id))
	if errors.Is(err, records.ErrNotFound) {
		return Question{}, ErrUnknown
	} else if err != nil {
		return Question{}, fmt.Errorf("reading question %s: %w", normID(id), err)
	}
	var q Question
	if err := json.Unmarshal(r.Value, &q); err != nil {
		return Question{}, fmt.Errorf("reading question %s: %w", normID(id), err)
	}
	return q, nil
}

// Answer records choice (from 1) as by's answer to question id, once:
// the first answer wins, and every later one gets ErrAnswered with the
// question as answered. The other refusals: ErrUnknown, ErrExpired,
// ErrNotAsked (someone else was asked), ErrWrongChat (by answered from
// another chat), ErrChoice. The question is returned with every error
// but ErrUnknown, so the refusal can say who answered or when it expired.
func (s *Store) Answer(ctx context.Context, id string, choice int, by Answerer) (Question, error) {
	var out Question
	var refusal error
	err := records.Update(ctx, s.t, normID(id), func(old []byte, exists bool) ([]byte, bool, error) {
		refusal = nil
		if !exists {
			return nil, false, ErrUnknown
		}
		var q Question
		if err := json.Unmarshal(old, &q); err != nil {
			return nil, false, fmt.Errorf("reading question %s: %w", normID(id), err)
		}
		out = q
		switch {
		case q.Answer != 0:
			refusal = ErrAnswered
		case !s.now().Before(q.Expires):
			refusal = ErrExpired
		case by.ChatKey != "" && by.ChatKey != q.ChatKey:
			refusal = ErrWrongChat
		case !q.Anyone && by.Identity != q.Asked:
			refusal = ErrNotAsked
		case q.Anyone && by.ChatKey != q.ChatKey && by.Identity != q.Asked:
			refusal = ErrWrongChat // "anyone in the chat": from the chat
		case choice < 1 || choice > len(q.Choices):
			refusal = ErrChoice
		}
		if refusal != nil {
			return nil, false, refusal
		}
		q.Answer, q.AnsweredBy, q.ByName, q.AnsweredAt = choice, by.Identity, by.Name, s.now().UTC()
		raw, err := json.Marshal(q)
		if err != nil {
			return nil, false, fmt.Errorf("answering question %s: %w", q.ID, err)
		}
		out = q
		return raw, false, nil
	})
	if err != nil {
		if errors.Is(err, ErrUnknown) {
			return Question{}, err
		}
		return out, err
	}
	return out, nil
}

// Open lists the questions of chatKey that still take answers, newest
// first.
func (s *Store) Open(ctx context.Context, chatKey string) ([]Question, error) {
	recs, err := s.t.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing questions: %w", err)
	}
	now := s.now()
	var open []Question
	for _, r := range recs {
		var q Question
		if json.Unmarshal(r.Value, &q) != nil || q.ChatKey != chatKey || q.Answer != 0 || !now.Before(q.Expires) {
			continue
		}
		open = append(open, q)
	}
	slices.SortFunc(open, func(a, b Question) int { return b.Created.Compare(a.Created) })
	return open, nil
}

// prune deletes questions answered or expired more than keepAnswered
// ago. It is best effort: a failure leaves them for the next Ask.
func (s *Store) prune(ctx context.Context) {
	recs, err := s.t.List(ctx)
	if err != nil {
		return
	}
	cutoff := s.now().Add(-keepAnswered)
	for _, r := range recs {
		var q Question
		if json.Unmarshal(r.Value, &q) != nil {
			continue
		}
		if q.Expires.Before(cutoff) || (q.Answer != 0 && q.AnsweredAt.Before(cutoff)) {
			_ = s.t.Delete(ctx, r.Key, r.Rev)
		}
	}
}

// normID accepts an id as typed (records.Code's form).
func normID(id string) string { return records.NormCode(id) }
