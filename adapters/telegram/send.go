package telegram

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"github.com/rs/zerolog"
	"golang.org/x/time/rate"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/adapters/markdown"
	"github.com/shipmyagent/ship/adapters/split"
	"github.com/shipmyagent/ship/runtime/dispatch"
)

// MaxMessageChars is Telegram's limit on one message, in characters.
const MaxMessageChars = 4096

// groupBudget messages (sends and edits together) per groupWindow is what
// Telegram lets a bot post to one group (Bot FAQ; see Limits).
const (
	groupBudget = 20
	groupWindow = time.Minute
)

// Limits pace outgoing messages as Telegram asks bots to: about one message
// per second in a chat, 20 per minute in a group, 30 per second overall.
// Sends wait for their turn; nothing is dropped.
//
// In a group, edits count against the same 20 a minute as sends (TDLib's
// maintainer in tdlib/td#2592: "They share the limit", and #3034; grammY's
// flood-limit docs, grammyjs/website#1076: "up to 20 message edits in a
// minute per group chat"), and the topics of a forum are one chat: every
// sendMessage and editMessageText to a group takes from one limiter.
type Limits struct {
	PerChat rate.Limit // 0 → 1/s
	// PerGroup is the steady rate of a group's limiter. 0 → 17/min: with
	// the Burst of 3 on top, no 60 s window ever holds more than
	// groupBudget calls, however the bursts fall.
	PerGroup rate.Limit
	Global   rate.Limit // 0 → 30/s
	// Burst lets a short multi-part reply go out without waiting a second
	// between parts. 0 → 3.
	Burst int
	// MaxAttempts per part for 429, 5xx and network errors. 0 → 5.
	MaxAttempts int
	// RetryBase is the first backoff after a 5xx or network error. 0 → 1 s.
	RetryBase time.Duration
}

func (l Limits) withDefaults() Limits {
	if l.PerChat == 0 {
		l.PerChat = 1
	}
	if l.Global == 0 {
		l.Global = 30
	}
	if l.Burst == 0 {
		l.Burst = 3
	}
	if l.PerGroup == 0 {
		// A token bucket lets through at most Burst + rate·window calls in
		// any window: the rate leaves room for the burst.
		l.PerGroup = rate.Limit(float64(max(groupBudget-l.Burst, 1)) / groupWindow.Seconds())
	}
	if l.MaxAttempts == 0 {
		l.MaxAttempts = 5
	}
	if l.RetryBase == 0 {
		l.RetryBase = time.Second
	}
	return l
}

// sender delivers text to chats, split, paced and retried.
type sender struct {
	api       *api
	limits    Limits
	parseMode string
	log       zerolog.Logger
	global    *rate.Limiter

	mu     sync.Mutex
	chats  map[int64]*chatPace
	newIDs map[int64]int64 // migrated group → supergroup
}

// chatPace is one chat's limiter and its 429 pause.
type chatPace struct {
	lim   *rate.Limiter
	until time.Time // nothing is sent to the chat before this (retry_after)
	used  time.Time
}

func newSender(a *api, l Limits, parseMode string, log zerolog.Logger) *sender {
	l = l.withDefaults()
	return &sender{
		api: a, limits: l, parseMode: parseMode, log: log,
		global: rate.NewLimiter(l.Global, int(min(max(1, l.Global), 100))),
		chats:  make(map[int64]*chatPace), newIDs: make(map[int64]int64),
	}
}

// CallsBeforeWire says the sender records a reply's intent after waiting
// for the chat's turn (dispatch.WireHooked).
func (a *Adapter) CallsBeforeWire() {}

// SendText is the telegram channel's dispatcher: it sends text into req's chat and topic.
//
// Without a parse_mode configured, the model's Markdown is rendered as
// Telegram entities (markdown.Telegram), so people read bold, code blocks
// and links instead of "**" and fences, and no escaping can make Telegram
// refuse the text. A configured parse_mode keeps the old behaviour: the
// text goes to Telegram's own dialect as written.
func (a *Adapter) SendText(ctx context.Context, req dispatch.RequestContext, text string) error {
	chatID, threadID, replyTo, err := replyTarget(req)
	if err != nil {
		return err
	}
	group := req.ChatType == "group" || req.ChatType == "supergroup"
	parts := a.sender.parts(text, false)
	for i, part := range parts {
		if _, err := a.sender.sendID(ctx, chatID, threadID, replyTo, group, part, ""); err != nil {
			if i > 0 {
				// The user has the parts before it: say how far it got.
				return &dispatch.PartError{Part: i + 1, Parts: len(parts), Err: err}
			}
			return err
		}
	}
	return nil
}

// parts cuts a reply into messages: rendered and split with its entities
// when no parse_mode is set, else split as Markdown source. A preview
// (partial) of a reply still being written has its open spans closed.
func (s *sender) parts(text string, partial bool) []markdown.Part {
	if s.parseMode == "" {
		render := markdown.Telegram
		if partial {
			render = markdown.TelegramPartial
		}
		plain, ents := render(text)
		if plain != "" {
			return markdown.Split(plain, ents, MaxMessageChars)
		}
		// Only Markdown that shows nothing (a link definition, say): send
		// it as written rather than drop the reply.
	}
	var parts []markdown.Part
	for _, p := range split.Split(text, MaxMessageChars) {
		parts = append(parts, markdown.Part{Text: p})
	}
	return parts
}

// isGroup tells a group (or supergroup, or channel) by its id: Telegram
// gives those negative ids and users positive ones. Calls that know only
// the chat id (edits, deletes) go by it.
func isGroup(chatID int64) bool { return chatID < 0 }

func (s *sender) pace(chatID int64, group bool) *chatPace {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.chats[chatID]
	if p == nil {
		limit := s.limits.PerChat
		if (group || isGroup(chatID)) && s.limits.PerGroup < limit {
			limit = s.limits.PerGroup
		}
		p = &chatPace{lim: rate.NewLimiter(limit, s.limits.Burst)}
		s.chats[chatID] = p
		s.pruneLocked()
	}
	p.used = time.Now()
	return p
}

// pruneLocked drops chats idle for ten minutes so the map stays small.
func (s *sender) pruneLocked() {
	if len(s.chats) < 5_000 {
		return
	}
	for id, p := range s.chats {
		if time.Since(p.used) > 10*time.Minute && time.Now().After(p.until) {
			delete(s.chats, id)
		}
	}
}

// waitN blocks until the chat may get n messages at once (an album posts
// several): its 429 pause is over and the rate limiters give n turns, or
// as many as their bursts hold.
func (s *sender) waitN(ctx context.Context, chatID int64, group bool, n int) error {
	p := s.pace(chatID, group)
	if err := s.sleepPause(ctx, chatID); err != nil {
		return err
	}
	if err := p.lim.WaitN(ctx, max(1, min(n, p.lim.Burst()))); err != nil {
		return err
	}
	return s.global.WaitN(ctx, max(1, min(n, s.global.Burst())))
}

func (s *sender) pauseChat(chatID int64, d time.Duration) {
	p := s.pace(chatID, false)
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := time.Now().Add(d); t.After(p.until) {
		p.until = t
	}
}

// sendID delivers one part (with its entities, if any), with markup
// (reply_markup JSON) when it is not "", and returns the id of the message
// sent. It returns an error only when Telegram will not take it: a bad
// request, the bot blocked or removed, or retries used up.
func (s *sender) sendID(ctx context.Context, chatID, threadID, replyTo int64, group bool, part markdown.Part, markup string) (int64, error) {
	entities := entitiesJSON(part.Entities)
	res, err := s.post(ctx, chatID, threadID, group, call{
		method: "sendMessage", what: "the message", messages: 1,
		formatted: entities != "" || s.parseMode != "",
		build: func(chatID, threadID int64, plain bool) (tgbotapi.Params, []tgbotapi.RequestFile, error) {
			p := messageParams(chatID, threadID, replyTo, part.Text)
			switch {
			case plain:
			case entities != "":
				p["entities"] = entities
			case s.parseMode != "":
				p["parse_mode"] = s.parseMode
			}
			if markup != "" {
				p["reply_markup"] = markup
			}
			return p, nil, nil
		},
	})
	if err != nil {
		return 0, err
	}
	return messageID(res), nil
}

// call is one Bot API call that posts into a chat, as the sender makes it.
type call struct {
	method string
	what   string // what it posts, for errors: "the message", "the files"
	// messages is how many messages it posts (an album posts several): the
	// turns it takes from the chat's pace.
	messages int
	// formatted: the call carries entities or a parse_mode, which it can
	// do without should Telegram refuse them.
	formatted bool
	// build gives the parameters and uploads of one attempt into chatID
	// and topic threadID (0: none); plain leaves the formatting out. It is
	// called anew for each attempt, so uploads are read from the start.
	build func(chatID, threadID int64, plain bool) (tgbotapi.Params, []tgbotapi.RequestFile, error)
}

// post makes c, paced and retried: it waits for the chat's turn, pauses
// the chat on 429 for retry_after, follows a group's migration to a
// supergroup, drops formatting Telegram cannot parse and a topic that is
// gone, and retries server and network errors with backoff. It returns an
// error only when Telegram will not take it: a bad request, the bot
// blocked or removed, or retries used up.
func (s *sender) post(ctx context.Context, chatID, threadID int64, group bool, c call) (json.RawMessage, error) {
	s.mu.Lock()
	if id, ok := s.newIDs[chatID]; ok {
		chatID = id
	}
	s.mu.Unlock()
	plain := !c.formatted
	for attempt := 1; ; attempt++ {
		if err := s.waitN(ctx, chatID, group, c.messages); err != nil {
			return nil, fmt.Errorf("telegram send: %w", err)
		}
		if err := dispatch.BeforeWire(ctx); err != nil {
			return nil, fmt.Errorf("telegram send: %w", err)
		}
		p, files, err := c.build(chatID, threadID, plain)
		if err != nil {
			return nil, fmt.Errorf("telegram send: %w", err)
		}
		var res json.RawMessage
		if len(files) > 0 {
			res, err = s.api.upload(ctx, c.method, p, files)
		} else {
			res, err = s.api.call(ctx, c.method, p)
		}
		if err == nil {
			return res, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("telegram send: %w", ctx.Err())
		}
		te, isAPI := apiError(err)
		switch {
		case isAPI && te.Code == http.StatusTooManyRequests:
			wait := time.Duration(max(te.RetryAfter, 1)) * time.Second
			s.pauseChat(chatID, wait)
			s.log.Warn().Int64("chatId", chatID).Dur("retryAfter", wait).Msg("telegram flood control: pausing this chat")
		case isAPI && te.MigrateToChatID != 0:
			s.log.Info().Int64("chatId", chatID).Int64("newChatId", te.MigrateToChatID).Msg("group migrated to a supergroup; sending there")
			s.mu.Lock()
			s.newIDs[chatID] = te.MigrateToChatID
			s.mu.Unlock()
			chatID = te.MigrateToChatID
		case isAPI && te.Code == http.StatusBadRequest && !plain && strings.Contains(te.Message, "can't parse entities"):
			// Formatting must never cost a reply: a parse_mode's markup, or
			// entities that (though tested against the fake) Telegram still
			// refuses, give way to plain text.
			s.log.Warn().Int64("chatId", chatID).Str("parseMode", s.parseMode).Str("description", te.Message).
				Msg("telegram refused the formatting; resending as plain text")
			plain = true
		case isAPI && te.Code == http.StatusBadRequest && threadID != 0 && strings.Contains(te.Message, "thread not found"):
			s.log.Warn().Int64("chatId", chatID).Int64("threadId", threadID).Msg("topic gone; sending to the chat itself")
			threadID = 0
		case isAPI && te.Code < 500:
			// 400, 403 (blocked, kicked), 413: retrying cannot help.
			s.log.Error().Int64("chatId", chatID).Int("code", te.Code).Str("description", te.Message).
				Str("method", c.method).Msg("telegram refused the message")
			return nil, fmt.Errorf("telegram refused %s (%d): %s", c.what, te.Code, te.Message)
		default: // 5xx, network
			if attempt >= s.limits.MaxAttempts {
				return nil, fmt.Errorf("telegram send failed after %d attempts: %w", attempt, err)
			}
			wait := adapters.Jitter(s.limits.RetryBase << (attempt - 1))
			s.log.Warn().Err(err).Int64("chatId", chatID).Dur("wait", wait).Str("method", c.method).Msg("telegram send failed; retrying")
			if !adapters.SleepCtx(ctx, wait) {
				return nil, fmt.Errorf("telegram send: %w", ctx.Err())
			}
			continue
		}
		if attempt >= s.limits.MaxAttempts+2 {
			return nil, fmt.Errorf("telegram send gave up after %d attempts: %w", attempt, err)
		}
	}
}

// messageParams are sendMessage's parameters for text in chatID's topic
// threadID (0: none), replying to replyTo (0: none) if it still exists.
func messageParams(chatID, threadID, replyTo int64, text string) tgbotapi.Params {
	p := tgbotapi.Params{"chat_id": strconv.FormatInt(chatID, 10), "text": text}
	if threadID != 0 {
		p["message_thread_id"] = strconv.FormatInt(threadID, 10)
	}
	if replyTo != 0 {
		p["reply_to_message_id"] = strconv.FormatInt(replyTo, 10)
		p["allow_sending_without_reply"] = "true"
	}
	return p
}

// messageID reads the message_id of a sent Message.
func messageID(res json.RawMessage) int64 {
	var m struct {
		MessageID int64 `json:"message_id"`
	}
	_ = json.Unmarshal(res, &m)
	return m.MessageID
}
