package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"golang.org/x/time/rate"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/adapters/markdown"
	"github.com/shipmyagent/ship/runtime/dispatch"
)

// DefaultStreamInterval is the least time between two updates of a reply
// being written: Telegram counts edits against a chat's flood limit of
// about one message a second. In groups the pace is slower still (see
// sender.groupInterval).
const DefaultStreamInterval = time.Second

// errPaced is why a group's reply is not shown yet: its next update is due
// later (replyStream.next).
var errPaced = errors.New("the reply's next update in this group is not due yet")

// OpenStream starts a reply shown while it is written: in private chats as
// a draft (sendMessageDraft, an ephemeral preview; the reply itself is sent
// when done), elsewhere as a message edited in place. A part that passes
// Telegram's 4,096 characters stays as it is and the rest goes on in a new
// message, cut as SendText cuts.
func (a *Adapter) OpenStream(_ context.Context, req dispatch.RequestContext, resume []string) (dispatch.ReplyStream, bool) {
	if !a.streaming.Load() {
		return nil, false
	}
	chatID, threadID, replyTo, err := replyTarget(req)
	if err != nil {
		return nil, false
	}
	s := &replyStream{a: a, chatID: chatID, threadID: threadID, replyTo: replyTo,
		group:  req.ChatType == "group" || req.ChatType == "supergroup",
		drafts: req.ChatType == "private", draftID: rand.Int64N(1<<53) + 1,
		interval: a.opts.StreamInterval}
	for _, id := range resume {
		if n, err := strconv.ParseInt(id, 10, 64); err == nil {
			s.parts = append(s.parts, shownPart{id: n})
		}
	}
	if s.group {
		// Every send and edit spends the group's budget of 20 a minute,
		// shared by all its topics: a reply shows at the pace of one turn
		// of it, and the first words wait one interval too, so that a reply
		// done by then goes out as one sendMessage instead of a send and an
		// edit.
		// (Without a group limit, as in benchmarks, there is nothing to save.)
		s.interval = a.sender.groupInterval(a.opts.StreamInterval)
		if len(s.parts) == 0 && a.sender.limits.PerGroup != rate.Inf {
			s.next = time.Now().Add(s.interval)
		}
	}
	return s, true
}

// replyStream is one reply being written into a Telegram chat.
type replyStream struct {
	a                         *Adapter
	chatID, threadID, replyTo int64
	group, drafts             bool
	draftID                   int64
	interval                  time.Duration
	// next is when the reply may next change in a group's chat (zero: now).
	next time.Time
	// parts are the messages of the reply in the chat, with the text each
	// shows ("" for one taken over from an interrupted run: unknown).
	parts []shownPart
}

type shownPart struct {
	id   int64
	text string // partKey of what it shows
}

// partKey tells two parts apart by their text and their formatting, as
// Telegram does when it answers "message is not modified".
func partKey(p markdown.Part) string {
	return p.Text + "\x00" + entitiesJSON(p.Entities)
}

func (s *replyStream) Interval() time.Duration { return s.interval }

// Show updates the chat: finished parts as messages, the part being written
// as a draft (private chats) or as the last message, edited. In a group an
// update before its time comes back as *dispatch.RetryAfter.
func (s *replyStream) Show(ctx context.Context, text string) ([]string, error) {
	if s.group {
		if wait := time.Until(s.next); wait > 0 {
			return s.ids(), &dispatch.RetryAfter{Wait: wait, Err: errPaced}
		}
	}
	parts := s.a.sender.parts(text, true)
	last := len(parts) - 1
	for i, p := range parts {
		var err error
		if i == last && s.drafts {
			err = s.a.sender.call(ctx, s.chatID, "sendMessageDraft", s.draftParams(p), false)
		} else {
			err = s.put(ctx, i, p, false)
		}
		if err != nil {
			return s.ids(), err
		}
	}
	s.next = time.Now().Add(s.interval)
	return s.ids(), nil
}

// Finish makes the chat hold exactly text: parts shown already are edited
// where they differ, missing ones sent, left-over ones deleted.
func (s *replyStream) Finish(ctx context.Context, text string) (dispatch.Delivery, error) {
	parts := s.a.sender.parts(text, false)
	if wait := time.Until(s.next); s.group && wait > 0 && s.changes(parts) {
		// The finishing edit keeps the reply's pace in the group too. A
		// reply not shown yet needs no wait: it goes out as one send.
		if !adapters.SleepCtx(ctx, wait) {
			return dispatch.Delivery{}, fmt.Errorf("telegram: finishing a reply: %w", ctx.Err())
		}
	}
	for i, p := range parts {
		if err := s.put(ctx, i, p, true); err != nil {
			if i > 0 {
				return dispatch.Delivery{}, fmt.Errorf("part %d of the reply: %w", i+1, err)
			}
			return dispatch.Delivery{}, err
		}
	}
	extra := s.parts[len(parts):]
	s.parts = s.parts[:len(parts)]
	for _, p := range extra {
		s.delete(ctx, p.id)
	}
	return dispatch.Delivery{}, nil
}

// changes reports whether making the chat show parts edits or deletes a
// message already shown.
func (s *replyStream) changes(parts []markdown.Part) bool {
	if len(s.parts) == 0 {
		return false
	}
	if len(parts) < len(s.parts) {
		return true
	}
	for i, p := range s.parts {
		if p.text != partKey(parts[i]) {
			return true
		}
	}
	return false
}

// Abandon deletes the messages shown; a draft fades by itself.
func (s *replyStream) Abandon(ctx context.Context) error {
	for _, p := range s.parts {
		s.delete(ctx, p.id)
	}
	s.parts = nil
	return nil
}

// put makes part i of the reply show text: sent when it is not in the chat
// yet, edited when it shows something else. persist retries as a send
// does (the final text); otherwise one attempt is made.
func (s *replyStream) put(ctx context.Context, i int, part markdown.Part, persist bool) error {
	key := partKey(part)
	if i < len(s.parts) {
		p := &s.parts[i]
		if p.text == key {
			return nil
		}
		err := s.a.sender.call(ctx, s.chatID, "editMessageText", s.editParams(p.id, part), persist)
		switch {
		case err == nil:
			p.text = key
			return nil
		case !persist || !gone(err):
			return err
		}
		// The message was deleted (or is too old to edit): the part goes
		// out anew in its place.
		id, err := s.a.sender.sendID(ctx, s.chatID, s.threadID, s.replyTo, s.group, part, "")
		if err != nil {
			return err
		}
		*p = shownPart{id: id, text: key}
		return nil
	}
	var id int64
	var err error
	if persist {
		id, err = s.a.sender.sendID(ctx, s.chatID, s.threadID, s.replyTo, s.group, part, "")
	} else {
		id, err = s.a.sender.sendOnce(ctx, s.chatID, s.threadID, s.replyTo, part)
	}
	if err != nil {
		return err
	}
	s.parts = append(s.parts, shownPart{id: id, text: key})
	return nil
}

func (s *replyStream) delete(ctx context.Context, id int64) {
	p := tgbotapi.Params{"chat_id": strconv.FormatInt(s.chatID, 10), "message_id": strconv.FormatInt(id, 10)}
	if err := s.a.sender.call(ctx, s.chatID, "deleteMessage", p, true); err != nil {
		s.a.log.Warn().Err(err).Int64("chatId", s.chatID).Int64("messageId", id).Msg("deleting an unfinished reply")
	}
}

func (s *replyStream) ids() []string {
	out := make([]string, len(s.parts))
	for i, p := range s.parts {
		out[i] = strconv.FormatInt(p.id, 10)
	}
	return out
}

func (s *replyStream) editParams(id int64, part markdown.Part) tgbotapi.Params {
	p := tgbotapi.Params{"chat_id": strconv.FormatInt(s.chatID, 10), "message_id": strconv.FormatInt(id, 10), "text": part.Text}
	withEntities(p, part)
	return p
}

func (s *replyStream) draftParams(part markdown.Part) tgbotapi.Params {
	p := tgbotapi.Params{"chat_id": strconv.FormatInt(s.chatID, 10), "draft_id": strconv.FormatInt(s.draftID, 10), "text": part.Text}
	withEntities(p, part)
	if s.threadID != 0 {
		p["message_thread_id"] = strconv.FormatInt(s.threadID, 10)
	}
	return p
}

// gone reports an edit refused because the message is not there to edit.
func gone(err error) bool {
	te, ok := apiError(err)
	return ok && te.Code == http.StatusBadRequest &&
		(strings.Contains(te.Message, "message to edit not found") || strings.Contains(te.Message, "message can't be edited"))
}

// sendOnce sends a message with one attempt, for a preview: a 429 comes
// back as *dispatch.RetryAfter and pauses the chat.
func (s *sender) sendOnce(ctx context.Context, chatID, threadID, replyTo int64, part markdown.Part) (int64, error) {
	var id int64
	p := messageParams(chatID, threadID, replyTo, part.Text)
	withEntities(p, part)
	err := s.callResult(ctx, chatID, "sendMessage", p, false,
		func(res []byte) { id = messageID(res) })
	return id, err
}

// call makes one Bot API call about chatID's messages (edit, draft,
// delete, chat action), with the chat's flood pause and formatting rules.
// Without persist it makes one attempt: a 429 pauses the chat and comes
// back as *dispatch.RetryAfter, a pause already running too. With persist
// it waits and retries as send does.
func (s *sender) call(ctx context.Context, chatID int64, method string, p tgbotapi.Params, persist bool) error {
	return s.callResult(ctx, chatID, method, p, persist, nil)
}

func (s *sender) callResult(ctx context.Context, chatID int64, method string, p tgbotapi.Params, persist bool, got func([]byte)) error {
	if _, hasText := p["text"]; hasText && s.parseMode != "" && p["entities"] == "" && method != "sendChatAction" {
		p["parse_mode"] = s.parseMode
	}
	for attempt := 1; ; attempt++ {
		if until := s.pausedUntil(chatID); !persist && time.Until(until) > 0 {
			return &dispatch.RetryAfter{Wait: time.Until(until), Err: fmt.Errorf("telegram %s: chat paused by flood control", method)}
		}
		if err := s.waitPause(ctx, chatID); err != nil {
			return fmt.Errorf("telegram %s: %w", method, err)
		}
		if err := s.takeTurn(ctx, chatID, method, persist); err != nil {
			return fmt.Errorf("telegram %s: %w", method, err)
		}
		if persist && method != "sendMessageDraft" && method != "sendChatAction" {
			// Finishing a streamed reply: its intent is recorded now.
			if err := dispatch.BeforeWire(ctx); err != nil {
				return fmt.Errorf("telegram %s: %w", method, err)
			}
		}
		res, err := s.api.call(ctx, method, p)
		if err == nil {
			if got != nil {
				got(res)
			}
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("telegram %s: %w", method, ctx.Err())
		}
		te, isAPI := apiError(err)
		switch {
		case isAPI && te.Code == http.StatusBadRequest && strings.Contains(te.Message, "message is not modified"):
			return nil // it shows that text already
		case isAPI && te.Code == http.StatusTooManyRequests:
			wait := time.Duration(max(te.RetryAfter, 1)) * time.Second
			s.pauseChat(chatID, wait)
			s.log.Warn().Int64("chatId", chatID).Str("method", method).Dur("retryAfter", wait).Msg("telegram flood control: pausing this chat")
			if !persist {
				return &dispatch.RetryAfter{Wait: wait, Err: err}
			}
		case isAPI && te.Code == http.StatusBadRequest && p["parse_mode"] != "" && strings.Contains(te.Message, "can't parse entities"):
			// A reply cut mid-way often has unclosed markup: show it plain.
			delete(p, "parse_mode")
		case isAPI && te.Code == http.StatusBadRequest && p["entities"] != "" && strings.Contains(te.Message, "can't parse entities"):
			// Never expected (the renderer follows Telegram's rules); the
			// text still shows, plain.
			delete(p, "entities")
		case isAPI && te.Code < 500:
			return err
		default: // 5xx, network
			if !persist || attempt >= s.limits.MaxAttempts {
				return err
			}
			if !adapters.SleepCtx(ctx, adapters.Jitter(s.limits.RetryBase<<(attempt-1))) {
				return fmt.Errorf("telegram %s: %w", method, ctx.Err())
			}
		}
		if attempt >= s.limits.MaxAttempts+2 {
			return fmt.Errorf("telegram %s gave up after %d attempts: %w", method, attempt, err)
		}
	}
}

// pausedUntil is the end of chatID's flood pause (zero when none).
func (s *sender) pausedUntil(chatID int64) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.chats[chatID]; p != nil {
		return p.until
	}
	return time.Time{}
}

// waitPause waits out chatID's flood pause and the global limiter. The
// group's limiter comes after it (takeTurn); private chats' edits skip the
// per-chat limiter: the stream paces them itself.
func (s *sender) waitPause(ctx context.Context, chatID int64) error {
	if err := s.sleepPause(ctx, chatID); err != nil {
		return err
	}
	return s.global.Wait(ctx)
}

// sleepPause waits out chatID's flood pause (retry_after), if any.
func (s *sender) sleepPause(ctx context.Context, chatID int64) error {
	if d := time.Until(s.pausedUntil(chatID)); d > 0 && !adapters.SleepCtx(ctx, d) {
		return ctx.Err()
	}
	return nil
}

// withEntities adds part's entities to p, when it has any.
func withEntities(p tgbotapi.Params, part markdown.Part) {
	if len(part.Entities) > 0 {
		p["entities"] = entitiesJSON(part.Entities)
	}
}

// entitiesJSON is the "entities" parameter for ents ("" for none).
func entitiesJSON(ents []markdown.Entity) string {
	if len(ents) == 0 {
		return ""
	}
	b, _ := json.Marshal(ents) // strings and ints only: cannot fail
	return string(b)
}
