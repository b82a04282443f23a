package feishu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"
	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/adapters/markdown"
	"github.com/shipmyagent/ship/adapters/split"
	"github.com/shipmyagent/ship/runtime/dispatch"
)

// StreamInterval is the least time between two updates of a reply shown
// while it is written. Feishu takes at most 5 updates a second of one
// message and 1,000 update calls a minute from one app: two a second keep
// well under the first and leave room for several chats at once.
const StreamInterval = 500 * time.Millisecond

// maxCardBytes is Feishu's limit on a card (30 KB). markdown.Feishu cuts
// replies into parts that stay under it (see
// TestWorstCaseCardFitsFeishusLimit).
const maxCardBytes = 30 << 10

// kindCard keeps the uuids of streamed cards apart from replies and notes.
const kindCard = "card"

// A streamed reply is an interactive card (msg_type interactive, card JSON
// 2.0 with a markdown element, as a finished reply) that is sent on the first Show, as a reply where
// a text reply would be one, and updated in place with PATCH
// /open-apis/im/v1/messages/:message_id. CardKit's streaming cards (card
// entities, element updates with sequence numbers, a streaming mode to
// close) would add three kinds of calls and state beyond the message id
// that a resumed run would have to recover; a patched card needs only the
// message ids the journal already keeps.

// OpenStream starts a reply shown while it is written, as a card updated in
// place. ok is false when streaming is off (Options.Streaming) or req names
// no chat. resume are the cards an interrupted attempt left: they are
// updated instead of new ones sent.
func (a *Adapter) OpenStream(_ context.Context, req dispatch.RequestContext, resume []string) (dispatch.ReplyStream, bool) {
	if !a.streaming.Load() || req.ChatID == "" {
		return nil, false
	}
	s := &cardStream{
		a:      a,
		opened: time.Now(),
		req:    req,
		n:      a.uuids.next(kindCard, req.MessageID),
		log:    a.log.With().Str("chatKey", req.ChatKey).Logger(),
	}
	for _, id := range resume {
		if id != "" && !slices.ContainsFunc(s.cards, func(c card) bool { return c.id == id }) {
			s.cards = append(s.cards, card{id: id})
		}
	}
	// New cards are numbered after the resumed ones, so that their uuids
	// differ from the ones those were sent with.
	s.sends = len(s.cards)
	return s, true
}

// errFirstCardLater is why a reply's first card is not sent yet.
var errFirstCardLater = errors.New("feishu: the first card of a reply waits a moment")

// firstCardAfter is Options.FirstCardAfter with its default.
func (a *Adapter) firstCardAfter() time.Duration {
	switch d := a.opts.FirstCardAfter; {
	case d < 0:
		return 0
	case d == 0:
		return StreamInterval
	default:
		return d
	}
}

// card is one message of a streamed reply.
type card struct {
	id   string
	text string // what it shows, when known
	// known: text is what the chat shows. A card is known only once
	// updated: a send with a uuid Feishu has seen (a run repeated after a
	// crash) returns the earlier message with its earlier content.
	known bool
}

// cardStream is one reply shown as it is written. Its methods are called
// from one goroutine at a time (the dispatch.ReplyStream contract).
type cardStream struct {
	a      *Adapter
	opened time.Time // when the reply began: the first card waits a little
	req    dispatch.RequestContext
	n      int // which card reply to req.MessageID this is, for uuids
	sends  int // cards sent so far (and resumed), for uuids
	cards  []card
	log    zerolog.Logger
}

// Interval is StreamInterval.
func (s *cardStream) Interval() time.Duration { return StreamInterval }

func (s *cardStream) ids() []string {
	out := make([]string, len(s.cards))
	for i, c := range s.cards {
		out[i] = c.id
	}
	return out
}

// Show makes the cards show text, split like a text reply: a finished part
// stays as it is and the rest grows in the next card. A rate limit comes
// back as a *dispatch.RetryAfter.
func (s *cardStream) Show(ctx context.Context, text string) ([]string, error) {
	if strings.TrimSpace(text) == "" {
		return s.ids(), nil
	}
	if len(s.cards) == 0 {
		// The first card waits: a reply done before it goes out once, as
		// text (Finish), not as a card sent and updated at once.
		if wait := s.a.firstCardAfter() - time.Since(s.opened); wait > 0 {
			return s.ids(), &dispatch.RetryAfter{Wait: wait, Err: errFirstCardLater}
		}
	}
	for i, part := range markdown.FeishuPartial(text) {
		if err := s.put(ctx, i, part, retryNone); err != nil {
			return s.ids(), err
		}
	}
	return s.ids(), nil
}

// Finish makes the chat show exactly text: the cards are updated (a card
// that cannot be, say because someone deleted it, is sent anew with the
// ones after it, so the parts stay in order), missing ones sent and left
// over ones deleted. When nothing was shown the reply is an ordinary text
// message.
func (s *cardStream) Finish(ctx context.Context, text string) (dispatch.Delivery, error) {
	if strings.TrimSpace(text) == "" {
		return dispatch.Delivery{}, errors.New("feishu: the reply is empty")
	}
	if len(s.cards) == 0 {
		return dispatch.Delivery{}, s.a.send(ctx, s.req, text, kindReply)
	}
	parts := markdown.Feishu(text)
	if len(parts) == 0 {
		parts = split.Split(text, MaxMessageChars)
	}
	for i, part := range parts {
		err := s.put(ctx, i, part, retryAll)
		if err == nil {
			continue
		}
		if ctx.Err() != nil || codeOf(err) == 0 || i >= len(s.cards) {
			return dispatch.Delivery{}, fmt.Errorf("part %d of the reply: %w", i+1, err)
		}
		// The card refuses updates: it and the cards after it are
		// replaced, in order, unless one of them can be neither updated
		// nor recalled and may already show its part: sent again, the
		// person would read that part twice.
		s.log.Warn().Err(err).Str("messageId", s.cards[i].id).Msg("feishu card cannot be updated; sending it again")
		kept := s.recall(ctx, s.cards[i:])
		stale := s.cards[i:]
		s.cards = s.cards[:i]
		if j, ok := mayShowItsPart(stale, kept, parts[i:]); ok {
			return dispatch.Delivery{}, fmt.Errorf("part %d of the reply: its card can be neither updated nor recalled, and may show it already: %w", i+1+j, err)
		}
		if err := s.put(ctx, i, part, retryAll); err != nil {
			return dispatch.Delivery{}, fmt.Errorf("part %d of the reply: %w", i+1, err)
		}
	}
	if len(s.cards) > len(parts) {
		s.remove(ctx, s.cards[len(parts):])
		s.cards = s.cards[:len(parts)]
	}
	return dispatch.Delivery{}, nil
}

// Abandon deletes every card shown: the reply was not delivered.
func (s *cardStream) Abandon(ctx context.Context) error {
	var errs []error
	for _, c := range s.cards {
		if err := s.a.deleteMessage(ctx, c.id); err != nil {
			errs = append(errs, err)
		}
	}
	s.cards = nil
	return errors.Join(errs...)
}

// recall deletes cards and returns which of them (by index) are still
// there; each failure is logged.
func (s *cardStream) recall(ctx context.Context, cards []card) map[int]bool {
	kept := map[int]bool{}
	for j, c := range cards {
		if err := s.a.deleteMessage(ctx, c.id); err != nil {
			s.log.Warn().Err(err).Str("messageId", c.id).Msg("feishu card cannot be recalled either")
			kept[j] = true
		}
	}
	return kept
}

// mayShowItsPart reports whether a card that stayed (kept, by index into
// stale) may already show the part it would be sent again as: its text is
// not known (a card Feishu may have shown with earlier content, see
// card.known) or is exactly that part. It returns the first such card's
// index. A card known to show less than its part may stay beside the
// new one: the person reads a partial card and the whole part, never the
// whole part twice.
func mayShowItsPart(stale []card, kept map[int]bool, parts []string) (int, bool) {
	for j, c := range stale {
		if !kept[j] {
			continue
		}
		if !c.known || (j < len(parts) && c.text == parts[j]) {
			return j, true
		}
	}
	return 0, false
}

// remove deletes cards, logging failures: what is left is a stale card,
// and the reply itself is complete.
func (s *cardStream) remove(ctx context.Context, cards []card) {
	for _, c := range cards {
		if err := s.a.deleteMessage(ctx, c.id); err != nil {
			s.log.Warn().Err(err).Str("messageId", c.id).Msg("feishu card left over; deleting it failed")
		}
	}
}

// put makes card i show text: an update of the card, or a new card when
// there is none yet.
func (s *cardStream) put(ctx context.Context, i int, text string, mode callMode) error {
	content, err := cardContent(text)
	if err != nil {
		return err
	}
	if i < len(s.cards) {
		c := &s.cards[i]
		if c.known && c.text == text {
			return nil
		}
		if err := s.a.updateCard(ctx, c.id, content, mode); err != nil {
			return err
		}
		c.text, c.known = text, true
		return nil
	}
	uuid := uuidFor(kindCard, s.req.MessageID, s.n, s.sends)
	s.sends++
	id, err := s.a.sendMessage(ctx, s.req, larkim.MsgTypeInteractive, content, uuid)
	if err != nil {
		return err
	}
	s.cards = append(s.cards, card{id: id, text: text})
	return nil
}

// updateCard replaces the content of the card messageID.
func (a *Adapter) updateCard(ctx context.Context, messageID, content string, mode callMode) error {
	_, err := a.call(ctx, "card update", mode, func(ctx context.Context) (apiResult, error) {
		resp, err := a.cli.Im.V1.Message.Patch(ctx, larkim.NewPatchMessageReqBuilder().
			MessageId(messageID).
			Body(larkim.NewPatchMessageReqBodyBuilder().Content(content).Build()).
			Build())
		if err != nil {
			return apiResult{}, err
		}
		return resultOf(resp.ApiResp, resp.CodeError), nil
	})
	return err
}

// deleteMessage recalls a message the bot sent. One already gone counts as
// deleted.
func (a *Adapter) deleteMessage(ctx context.Context, messageID string) error {
	_, err := a.call(ctx, "message delete", retryAll, func(ctx context.Context) (apiResult, error) {
		resp, err := a.cli.Im.V1.Message.Delete(ctx, larkim.NewDeleteMessageReqBuilder().MessageId(messageID).Build())
		if err != nil {
			return apiResult{}, err
		}
		return resultOf(resp.ApiResp, resp.CodeError), nil
	})
	if codeOf(err) == codeMessageGone {
		return nil
	}
	return err
}

// cardJSON is a card showing card Markdown: JSON 2.0 (the schema whose
// rich text component renders headings, quotes, tables and code blocks
// with a language; it needs Feishu 7.20 or later), one markdown element.
// JSON 2.0 cards are always shared, so updates need no update_multi flag;
// it is declared anyway, as the card update API asks of every card.
type cardJSON struct {
	Schema string `json:"schema"`
	Config struct {
		UpdateMulti bool `json:"update_multi"`
	} `json:"config"`
	Body struct {
		Elements []any `json:"elements"`
	} `json:"body"`
}

type cardMarkdown struct {
	Tag     string `json:"tag"`
	Content string `json:"content"`
}

// newCard is a card of elements.
func newCard(elements ...any) cardJSON {
	c := cardJSON{Schema: "2.0"}
	c.Config.UpdateMulti = true
	c.Body.Elements = elements
	return c
}

// cardContent is the content string of a card showing md, card Markdown
// as markdown.Feishu writes it.
func cardContent(md string) (string, error) {
	return encodeCard(newCard(cardMarkdown{Tag: "markdown", Content: md}))
}

// encodeCard writes a card as the content string of a message.
func encodeCard(c cardJSON) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // "<" as is: a third of the bytes of "\u003c"
	if err := enc.Encode(c); err != nil {
		return "", fmt.Errorf("feishu card: %w", err)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// The adapter shows replies while they are written and shows that it is
// working on a message.
var (
	_ dispatch.Streamer      = (*Adapter)(nil)
	_ dispatch.Typist        = (*Adapter)(nil)
	_ dispatch.TypingCleaner = (*Adapter)(nil)
)
