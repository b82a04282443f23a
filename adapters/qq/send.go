package qq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/tencent-connect/botgo/dto"
	"github.com/tencent-connect/botgo/errs"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/runtime/dispatch"
)

// MaxMessageChars is how long one QQ message may be, in characters; longer
// replies are split.
const MaxMessageChars = 2000

// QQ error codes the adapter acts on or explains.
const (
	codeAuthInvalid     = 11241
	codeTokenExpired    = 11244
	codeMsgIDExpired    = 40034005
	codeGuildMsgExpired = 304103 // "消息ID已过期，不能回复"
	codeEventIDExpired  = 40034026
	codeReplyLimit      = 40034128 // "被动回复时间或次数超限": time or count
	codeDuplicateSeq    = 40054005
	maxSeqBumps         = 5 // msg_seq values skipped at most when QQ says one was used
)

var codeHints = map[int]string{
	codeAuthInvalid:     "Authorization rejected",
	codeTokenExpired:    "access token expired or unknown",
	codeMsgIDExpired:    "msg_id expired (outside the passive-reply window)",
	codeGuildMsgExpired: "message id expired (outside the passive-reply window)",
	codeEventIDExpired:  "event_id expired (outside the passive-reply window)",
	40034024:            "msg_id invalid",
	codeReplyLimit:      "passive-reply time or count limit exceeded",
	codeDuplicateSeq:    "msg_seq already used for this msg_id",
	codeURLRefused:      "links are not allowed",
	codeGuildURL:        "links are not allowed",
	22009:               "message rate limit reached",
	codeMarkdownRefused: "markdown not allowed for this bot",
	304020:              "file too large",
	304082:              "rich media upload failed",
	304083:              "rich media conversion failed",
}

// APIError is QQ's refusal of an API call, read from its answer.
type APIError struct {
	HTTPStatus int
	Code       int // QQ's code ("code" or "err_code" in the body), 0 if none
	Message    string
	TraceID    string
}

// Error names the status, the code with what it means, and QQ's message.
func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "qq API: HTTP %d", e.HTTPStatus)
	if e.Code != 0 {
		fmt.Fprintf(&b, ", code %d", e.Code)
		if hint := codeHints[e.Code]; hint != "" {
			b.WriteString(" (" + hint + ")")
		}
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	return b.String()
}

// describe turns botgo's error for a refused call (an *errs.Err holding the
// HTTP status and the raw body) into an *APIError; other errors pass through.
func describe(err error) error {
	var be *errs.Err
	if !errors.As(err, &be) || be.Code() < 100 || be.Code() > 599 {
		return err
	}
	var body struct {
		Code    int    `json:"code"`
		ErrCode int    `json:"err_code"`
		Message string `json:"message"`
	}
	ae := &APIError{HTTPStatus: be.Code(), TraceID: be.Trace()}
	if json.Unmarshal([]byte(be.Text()), &body) == nil {
		ae.Code, ae.Message = body.Code, body.Message
		if ae.Code == 0 {
			ae.Code = body.ErrCode
		}
	} else {
		ae.Message = strings.TrimSpace(be.Text())
		if len(ae.Message) > 200 {
			ae.Message = ae.Message[:200] + "…"
		}
	}
	return ae
}

// textReply is a group or C2C text or markdown message. botgo's
// MessageToCreate drops msg_type 0 (omitempty); QQ documents it as
// required, so it is sent here.
type textReply struct {
	Content  string     `json:"content,omitempty"`
	MsgType  int        `json:"msg_type"`
	Markdown *mdContent `json:"markdown,omitempty"`
	MsgID    string     `json:"msg_id,omitempty"`
	MsgSeq   uint32     `json:"msg_seq,omitempty"`
}

// mdContent is native markdown: {"content": …} (botgo's dto.Markdown sends
// the template fields too, as zero values).
type mdContent struct {
	Content string `json:"content"`
}

// GetEventID implements dto.APIMessage.
func (textReply) GetEventID() string { return "" }

// GetSendType implements dto.APIMessage.
func (textReply) GetSendType() dto.SendType { return dto.Text }

// SendText is the qq channel's dispatcher: the text goes, split, as passive
// replies to the triggering message, to the route of its chat kind. See
// SendTextReport.
func (a *Adapter) SendText(ctx context.Context, req dispatch.RequestContext, text string) error {
	_, err := a.send(ctx, req, text, false)
	return err
}

// SendTextReport sends like SendText and says what the user got when it
// differs from text: QQ refuses links, so a part QQ refused for one is sent
// again with its links made non-clickable (links.go), and the Delivery
// tells the model. Where QQ limits passive replies (groups: 5 minutes, C2C:
// 60 minutes, 5 replies per message) a reply past the window, or one that
// would need more replies than are left even packed densely, is not sent:
// the error wraps dispatch.ErrReplyExpired or dispatch.ErrReplyLimit and
// says why.
func (a *Adapter) SendTextReport(ctx context.Context, req dispatch.RequestContext, text string) (dispatch.Delivery, error) {
	return a.send(ctx, req, text, false)
}

// sendBusyNote is Intake's BusySend: a busy note goes out only if it leaves
// the answer the replies it may need.
func (a *Adapter) sendBusyNote(ctx context.Context, req dispatch.RequestContext, text string) error {
	_, err := a.send(ctx, req, text, true)
	if errors.Is(err, errNoteSkipped) || dispatch.IsReplyRefused(err) {
		a.log.Debug().Str("chatKey", req.ChatKey).Str("msgId", req.MessageID).AnErr("reason", err).Msg("qq busy note not sent")
		return nil
	}
	return err
}

// send claims the replies text needs from its message (packing it densely
// when the nice cut needs more than are left), then sends the parts in
// order. Replies claimed for parts that surely did not arrive are given
// back. note marks the adapter's busy note, which must leave the answer its
// replies.
func (a *Adapter) send(ctx context.Context, req dispatch.RequestContext, text string, note bool) (dispatch.Delivery, error) {
	a.mu.Lock()
	started := a.started
	a.mu.Unlock()
	if !started {
		return dispatch.Delivery{}, fmt.Errorf("qq send: %w", errNotRunning)
	}
	if strings.TrimSpace(text) == "" {
		return dispatch.Delivery{}, errors.New("qq send: the text is empty")
	}
	md := a.markdown.Load() && !a.noMarkdown.Load()
	d, err := a.sendRendered(ctx, req, render(text, md), note, md)
	if md && errors.Is(err, errMarkdownRefused) {
		d, err = a.sendRendered(ctx, req, render(text, false), note, false)
	}
	return d, err
}

// sendRendered sends text, rendered for QQ already: as markdown messages
// when md is set, else as text messages.
func (a *Adapter) sendRendered(ctx context.Context, req dispatch.RequestContext, text string, note, md bool) (dispatch.Delivery, error) {
	var parts []string
	err := a.replies.claim(req.ChatType, req.MessageID, note, func(left int) (int, error) {
		parts = fit(text, left)
		if left >= 0 && len(parts) > left {
			rule := replyRules[req.ChatType]
			return 0, fmt.Errorf("the reply needs %d QQ messages of up to %d characters, but QQ takes at most %d replies to one message "+
				"and only %d are left: shorten it to at most %d characters: %w",
				len(parts), MaxMessageChars, rule.max, left, left*MaxMessageChars, dispatch.ErrReplyLimit)
		}
		return len(parts), nil
	})
	if err != nil {
		if !note {
			a.log.Warn().Err(err).Str("chatKey", req.ChatKey).Str("msgId", req.MessageID).Msg("qq reply not sent: QQ would refuse it")
		}
		return dispatch.Delivery{}, fmt.Errorf("qq send: %w", err)
	}
	sent, altered := make([]string, 0, len(parts)), false
	for i, part := range parts {
		out, err := a.sendPart(ctx, req, part, md)
		if err != nil && i == 0 && md && markdownRefused(err) {
			a.replies.release(req.MessageID, len(parts))
			if a.noMarkdown.CompareAndSwap(false, true) {
				a.log.Warn().Err(err).Msg("QQ refused a markdown message: this bot lacks QQ's Markdown permission " +
					"(apply for it at q.qq.com, or set adapters.qq.markdown to false); replies go as plain text from now on")
			}
			return dispatch.Delivery{}, fmt.Errorf("qq send: %w: %w", errMarkdownRefused, err)
		}
		if err != nil {
			unsent := len(parts) - i
			if !refusedForSure(err) {
				unsent-- // it may have arrived: it keeps its reply
			}
			a.replies.release(req.MessageID, unsent)
			if len(parts) > 1 {
				return dispatch.Delivery{}, &dispatch.PartError{Part: i + 1, Parts: len(parts), Err: err}
			}
			return dispatch.Delivery{}, err
		}
		altered = altered || out != part
		sent = append(sent, out)
	}
	if !altered {
		return dispatch.Delivery{}, nil
	}
	return dispatch.Delivery{Sent: strings.Join(sent, "\n"), Notices: []string{linkNotice}}, nil
}

// refusedForSure reports whether err is QQ's definite refusal (a 4xx other
// than 429): the message did not arrive.
func refusedForSure(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.HTTPStatus >= 400 && ae.HTTPStatus < 500 && ae.HTTPStatus != http.StatusTooManyRequests
}

// sendPart posts one message and returns the text that went out. msg_seq
// counts the replies to one msg_id, so every part and every chat_send for
// one message gets its own. It retries 5xx, 429 and network errors with
// backoff, a rejected token once after dropping it, and a refused link with
// the links defanged; any other refusal is returned as it is (an
// *APIError), wrapping dispatch.ErrReplyExpired or ErrReplyLimit where QQ
// says the message takes no more replies.
func (a *Adapter) sendPart(ctx context.Context, req dispatch.RequestContext, text string, md bool) (string, error) {
	seq := a.replies.nextSeq(req.MessageID)
	refreshed, uncertain, bumps, defanged := false, false, 0, 0
	for attempt := 1; ; attempt++ {
		err := a.post(ctx, req, text, seq, md)
		a.count(ctx, "message send", err)
		if err == nil {
			return text, nil
		}
		if ctx.Err() != nil {
			return "", fmt.Errorf("qq send: %w", ctx.Err())
		}
		var ae *APIError
		isAPI := errors.As(err, &ae)
		switch {
		case isAPI && (ae.HTTPStatus == http.StatusUnauthorized || ae.Code == codeTokenExpired || ae.Code == codeAuthInvalid) && !refreshed:
			a.log.Warn().Int("code", ae.Code).Msg("qq rejected the access token; getting a new one")
			a.tokens.invalidate()
			refreshed = true
			continue
		case isAPI && ae.Code == codeDuplicateSeq && uncertain:
			// An earlier attempt with this msg_seq timed out or failed on
			// QQ's side, yet QQ has it: it was delivered.
			return text, nil
		case isAPI && ae.Code == codeDuplicateSeq && bumps < maxSeqBumps:
			// The seq was used before (by an earlier process: the counter
			// lives in memory), so take the next one.
			bumps++
			seq = a.replies.nextSeq(req.MessageID)
			continue
		case isAPI && (ae.Code == codeURLRefused || ae.Code == codeGuildURL) && defanged < 2:
			if next := a.defangFor(text, &defanged); next != text {
				a.log.Warn().Str("chatKey", req.ChatKey).Str("msgId", req.MessageID).Int("code", ae.Code).Int("level", defanged).
					Msg("qq refused a link; sending the part again with its links made non-clickable")
				text, seq = next, a.replies.nextSeq(req.MessageID)
				continue
			}
		}
		if isAPI && ae.HTTPStatus < 500 && ae.HTTPStatus != http.StatusTooManyRequests {
			a.log.Error().Str("chatKey", req.ChatKey).Str("msgId", req.MessageID).Int("status", ae.HTTPStatus).
				Int("code", ae.Code).Str("message", ae.Message).Str("traceId", ae.TraceID).Msg("qq refused the message")
			return "", a.closedBy(req.MessageID, ae)
		}
		uncertain = uncertain || !isAPI || ae.HTTPStatus >= 500
		if attempt >= a.opts.MaxAttempts {
			a.log.Error().Err(err).Str("chatKey", req.ChatKey).Int("attempts", attempt).Msg("qq send failed")
			return "", fmt.Errorf("qq send failed after %d attempts: %w", attempt, err)
		}
		wait := adapters.Jitter(a.opts.RetryBase << (attempt - 1))
		a.log.Warn().Err(err).Str("chatKey", req.ChatKey).Dur("wait", wait).Msg("qq send failed; retrying")
		if !adapters.SleepCtx(ctx, wait) {
			return "", fmt.Errorf("qq send: %w", ctx.Err())
		}
	}
}

// defangFor returns text with its links made non-clickable at the next
// level that changes it, counting the levels tried in *level; text itself
// when no level changes it.
func (a *Adapter) defangFor(text string, level *int) string {
	for *level < 2 {
		*level++
		if out := defang(text, *level); out != text {
			return out
		}
	}
	return text
}

// closedBy returns QQ's refusal ae, marked as the end of the message's
// replies when it is one (and remembered, so later sends fail at once).
func (a *Adapter) closedBy(msgID string, ae *APIError) error {
	var err error
	switch ae.Code {
	case codeMsgIDExpired, codeGuildMsgExpired, codeEventIDExpired:
		err = fmt.Errorf("%w: %w", ae, dispatch.ErrReplyExpired)
	case codeReplyLimit:
		err = fmt.Errorf("%w: %w", ae, dispatch.ErrReplyLimit)
	default:
		return ae
	}
	a.replies.close(msgID, err)
	return err
}

// post makes one API call: a text message, or with md a markdown one
// (msg_type 2, markdown {content}; bot.q.qq.com "发送消息" and "Markdown
// 消息"). botgo's openapi client changes shared state on every call (auth
// header, trace id), so calls are serialised.
func (a *Adapter) post(ctx context.Context, req dispatch.RequestContext, text string, seq uint32, md bool) error {
	a.apiMu.Lock()
	defer a.apiMu.Unlock()
	v2 := textReply{Content: text, MsgID: req.MessageID, MsgSeq: seq}
	guild := &dto.MessageToCreate{Content: text, MsgID: req.MessageID, MsgSeq: seq}
	if md {
		v2 = textReply{MsgType: int(dto.MarkdownMsg), Markdown: &mdContent{Content: text}, MsgID: req.MessageID, MsgSeq: seq}
		guild = &dto.MessageToCreate{Markdown: &dto.Markdown{Content: text}, MsgID: req.MessageID, MsgSeq: seq}
	}
	var err error
	switch req.ChatType {
	case kindGroup:
		_, err = a.api.PostGroupMessage(ctx, req.ChatID, v2)
	case kindC2C:
		_, err = a.api.PostC2CMessage(ctx, req.ChatID, v2)
	case kindChannel:
		_, err = a.api.PostMessage(ctx, req.ChatID, guild)
	case kindDM:
		_, err = a.api.PostDirectMessage(ctx, &dto.DirectMessage{GuildID: req.ChatID}, guild)
	default:
		return fmt.Errorf("qq send: unknown chat type %q", req.ChatType)
	}
	if err != nil {
		return describe(err)
	}
	return nil
}
