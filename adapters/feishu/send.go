package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/adapters/markdown"
	"github.com/shipmyagent/ship/adapters/split"
	"github.com/shipmyagent/ship/runtime/dispatch"
)

// MaxMessageChars is the size of one plain text message ship sends (text
// that renders to no card Markdown), in characters. Feishu's own limit is on the request body (150 KB); 4,000
// characters stay far below it even when every character is escaped
// (≤ 6 bytes each in JSON), and keep messages readable.
const MaxMessageChars = 4000

// Feishu answer codes the adapter acts on.
const (
	codeRateLimit      = 99991400 // platform-wide request frequency limit
	codeChatRateLimit  = 230020   // too many messages to this chat
	codeMissingToken   = 99991661
	codeInvalidToken   = 99991663 // tenant token invalid or expired
	codeAppTokenBad    = 99991664
	codeTokenInvalid   = 99991668 // "invalid access token"; the SDK does not retry it
	codeAccessTokenBad = 99991671
	codeMessageGone    = 230011 // the message replied to was withdrawn
)

// rateResetHeader says in how many seconds a rate limit resets.
const rateResetHeader = "X-Ogw-Ratelimit-Reset"

// Limits bound the retries of one send.
type Limits struct {
	// MaxAttempts per part for rate limits, 5xx and network errors. 0 → 5.
	MaxAttempts int
	// RetryBase is the first backoff; it doubles, with jitter. 0 → 1 s.
	RetryBase time.Duration
	// MaxWait caps one wait, a rate-limit reset included. 0 → 1 min.
	MaxWait time.Duration
}

func (l Limits) withDefaults() Limits {
	if l.MaxAttempts <= 0 {
		l.MaxAttempts = 5
	}
	if l.RetryBase <= 0 {
		l.RetryBase = time.Second
	}
	if l.MaxWait <= 0 {
		l.MaxWait = time.Minute
	}
	return l
}

// finalError is an answer that retrying cannot change.
type finalError struct{ msg string }

func (e *finalError) Error() string { return e.msg }

// SendText is the feishu channel's dispatcher. The model's Markdown goes as
// cards (JSON 2.0) with one rich text (markdown) element each, rendered by
// markdown.Feishu: code blocks, lists, tables and links show as such, and
// Feishu's own tags in the text (<at id=all>) show as text. In groups (and in threads)
// the reply answers the triggering message, in its thread when it has one;
// in a one-to-one chat it is a new message. Each part carries a uuid that
// is the same for every attempt of that part, so Feishu drops a repeat of a
// send that went through although its answer was lost.
func (a *Adapter) SendText(ctx context.Context, req dispatch.RequestContext, text string) error {
	return a.send(ctx, req, text, kindReply)
}

// Kinds of messages, kept apart in uuids: a busy note and the reply that
// follows it must never share one, even after a restart.
const (
	kindReply = "reply"
	kindNote  = "note"
)

func (a *Adapter) send(ctx context.Context, req dispatch.RequestContext, text, kind string) error {
	_, err := a.sendCards(ctx, req, text, kind)
	return err
}

// sendCards sends the model's Markdown as one card per part (see
// markdown.Feishu) and returns their message ids. Text that renders to
// nothing Feishu can show goes as plain text.
func (a *Adapter) sendCards(ctx context.Context, req dispatch.RequestContext, text, kind string) ([]string, error) {
	if req.ChatID == "" {
		return nil, errors.New("feishu: no chat to send to")
	}
	parts := markdown.Feishu(text)
	msgType := larkim.MsgTypeInteractive
	if len(parts) == 0 {
		parts, msgType = split.Split(text, MaxMessageChars), larkim.MsgTypeText
	}
	n := a.uuids.next(kind, req.MessageID)
	var ids []string
	for i, part := range parts {
		content, err := partContent(msgType, part)
		if err != nil {
			return ids, err
		}
		id, err := a.sendMessage(ctx, req, msgType, content, uuidFor(kind, req.MessageID, n, i))
		if err != nil {
			if i > 0 {
				// The user has the parts before it: say how far it got.
				return ids, &dispatch.PartError{Part: i + 1, Parts: len(parts), Err: err}
			}
			return ids, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// partContent is the content of one message part: a card showing card
// Markdown, or a text message.
func partContent(msgType, part string) (string, error) {
	if msgType == larkim.MsgTypeInteractive {
		return cardContent(part)
	}
	content, err := json.Marshal(map[string]string{"text": part})
	if err != nil {
		return "", fmt.Errorf("feishu send: %w", err)
	}
	return string(content), nil
}

// apiResult is what the adapter reads from an SDK response.
type apiResult struct {
	code   int
	msg    string
	status int
	header http.Header
	// messageID is the message a send created.
	messageID string
}

func resultOf(r *larkcore.ApiResp, ce larkcore.CodeError) apiResult {
	res := apiResult{code: ce.Code, msg: ce.Msg}
	if r != nil {
		res.status, res.header = r.StatusCode, r.Header
	}
	return res
}

type outcome int

const (
	outcomeOK outcome = iota
	outcomeTokenInvalid
	outcomeRateLimited
	outcomeTransient
	outcomeTargetGone
	outcomeFinal
)

// classify sorts an answer. API errors are in the response's code, not in
// err: err is the transport (or the SDK's token fetch).
func classify(res apiResult, err error) outcome {
	if err != nil {
		var ce larkcore.CodeError
		var bad *larkcore.IllegalParamError
		switch {
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			return outcomeFinal
		case errors.As(err, &ce):
			if isRateLimit(ce.Code, 0) {
				return outcomeRateLimited
			}
			return outcomeFinal // the token fetch was refused: bad credentials
		case errors.As(err, &bad):
			return outcomeFinal
		case errors.As(err, new(*readError)):
			return outcomeFinal // a local file: no retry reads it better
		}
		return outcomeTransient
	}
	switch {
	case res.code == 0 && res.status < 300:
		return outcomeOK
	case isRateLimit(res.code, res.status):
		return outcomeRateLimited
	case isTokenInvalid(res.code):
		return outcomeTokenInvalid
	case res.code == codeMessageGone:
		return outcomeTargetGone
	case res.status >= 500:
		return outcomeTransient
	}
	return outcomeFinal
}

// isTokenInvalid reports the answers that mean "this access token is no
// good": the SDK's own list (99991663, 99991664, 99991671, which it retries
// once with the SAME cached token), plus 99991661 and 99991668, which Lark's
// own CLI also classes as missing/invalid tokens. Each makes the adapter drop
// the cached token and retry once with a fresh one.
func isTokenInvalid(code int) bool {
	switch code {
	case codeMissingToken, codeInvalidToken, codeAppTokenBad, codeTokenInvalid, codeAccessTokenBad:
		return true
	}
	return false
}

func isRateLimit(code, status int) bool {
	return status == http.StatusTooManyRequests || code == codeRateLimit || code == codeChatRateLimit
}

// A Feishu thread is reached only by replying in it: the adapter says so
// for posts ship makes on its own.
var _ adapters.TaskRouter = (*Adapter)(nil)

// TaskRoute is where a post ship makes on its own (a scheduled task's
// result) goes in the chat whose latest message came by last: a new
// message in the chat, not a reply to anyone, except in a thread, which
// Feishu lets a bot post in only as a reply to one of its messages (the
// latest).
func (a *Adapter) TaskRoute(last dispatch.RequestContext) dispatch.RequestContext {
	if last.ThreadID == "" {
		last.MessageID = ""
	}
	return last
}

// sendMessage delivers one message of msgType into req's chat and returns
// its id: in groups and threads a reply to the triggering message (in its
// thread when it has one), in a one-to-one chat a new message.
func (a *Adapter) sendMessage(ctx context.Context, req dispatch.RequestContext, msgType, content, uuid string) (string, error) {
	replyTo := ""
	if req.MessageID != "" && (req.ChatType != "p2p" || req.ThreadID != "") {
		replyTo = req.MessageID
	}
	log := a.log.With().Str("chatKey", req.ChatKey).Logger()
	refreshed := false
	for attempt := 1; ; attempt++ {
		res, err := a.post(ctx, req.ChatID, replyTo, req.ThreadID != "", msgType, content, uuid)
		a.count(ctx, "message send", res, err)
		var wait time.Duration
		kind := classify(res, err)
		if kind == outcomeTargetGone && replyTo == "" {
			kind = outcomeFinal
		}
		switch kind {
		case outcomeOK:
			return res.messageID, nil
		case outcomeTokenInvalid:
			if refreshed {
				return "", fmt.Errorf("feishu refused a fresh access token (code %d): %s", res.code, res.msg)
			}
			// The SDK keeps an invalid token until it expires: drop it,
			// and the next call fetches a new one.
			log.Info().Int("code", res.code).Msg("feishu access token rejected; fetching a new one")
			dropTokens(a.opts.AppID)
			refreshed = true
			attempt--
			continue
		case outcomeTargetGone:
			log.Warn().Str("messageId", replyTo).Msg("feishu message to reply to is gone; sending to the chat")
			replyTo = ""
			attempt--
			continue
		case outcomeRateLimited:
			wait = a.rateWait(res, attempt)
			log.Warn().Int("code", res.code).Dur("wait", wait).Msg("feishu rate limit; waiting")
		case outcomeTransient:
			wait = adapters.Jitter(a.opts.Limits.RetryBase << min(attempt-1, 10))
			log.Warn().Str("error", a.failure(res, err)).Dur("wait", wait).Msg("feishu send failed; retrying")
		default:
			if err != nil && ctx.Err() != nil {
				return "", fmt.Errorf("feishu send: %w", ctx.Err())
			}
			msg := a.failure(res, err)
			log.Error().Str("error", msg).Msg("feishu refused the message")
			return "", fmt.Errorf("feishu refused the message: %s", msg)
		}
		if attempt >= a.opts.Limits.MaxAttempts {
			return "", fmt.Errorf("feishu send failed after %d attempts: %s", attempt, a.failure(res, err))
		}
		if !adapters.SleepCtx(ctx, min(wait, a.opts.Limits.MaxWait)) {
			return "", fmt.Errorf("feishu send: %w", ctx.Err())
		}
	}
}

// rateWait is how long to wait after a rate-limit answer: the reset the
// gateway names, else an exponential backoff.
func (a *Adapter) rateWait(res apiResult, attempt int) time.Duration {
	if s, err := strconv.Atoi(res.header.Get(rateResetHeader)); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return adapters.Jitter(a.opts.Limits.RetryBase << min(attempt-1, 10))
}

// failure describes a failed call for logs and for the model, without
// secrets.
func (a *Adapter) failure(res apiResult, err error) string {
	if err != nil {
		return a.scrub(err.Error())
	}
	if res.code != 0 {
		return fmt.Sprintf("code %d: %s", res.code, res.msg)
	}
	return fmt.Sprintf("HTTP %d", res.status)
}

// post makes one send call: a reply to replyTo, or a new message in chatID.
func (a *Adapter) post(ctx context.Context, chatID, replyTo string, inThread bool, msgType, content, uuid string) (apiResult, error) {
	if replyTo != "" {
		resp, err := a.cli.Im.V1.Message.Reply(ctx, larkim.NewReplyMessageReqBuilder().
			MessageId(replyTo).
			Body(larkim.NewReplyMessageReqBodyBuilder().
				MsgType(msgType).Content(content).ReplyInThread(inThread).Uuid(uuid).Build()).
			Build())
		if err != nil {
			return apiResult{}, err
		}
		res := resultOf(resp.ApiResp, resp.CodeError)
		if resp.Data != nil && resp.Data.MessageId != nil {
			res.messageID = *resp.Data.MessageId
		}
		return res, nil
	}
	resp, err := a.cli.Im.V1.Message.Create(ctx, larkim.NewCreateMessageReqBuilder().
		ReceiveIdType(larkim.CreateMessageV1ReceiveIDTypeChatId).
		Body(larkim.NewCreateMessageReqBodyBuilder().
			ReceiveId(chatID).MsgType(msgType).Content(content).Uuid(uuid).Build()).
		Build())
	if err != nil {
		return apiResult{}, err
	}
	res := resultOf(resp.ApiResp, resp.CodeError)
	if resp.Data != nil && resp.Data.MessageId != nil {
		res.messageID = *resp.Data.MessageId
	}
	return res, nil
}
