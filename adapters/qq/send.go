package qq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tencent-connect/botgo/dto"
	"github.com/tencent-connect/botgo/errs"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/adapters/split"
	"github.com/shipmyagent/ship/runtime/dispatch"
)

// MaxMessageChars is how long one QQ message may be, in characters; longer
// replies are split.
const MaxMessageChars = 2000

// QQ error codes the adapter acts on or explains.
const (
	codeAuthInvalid  = 11241
	codeTokenExpired = 11244
	codeDuplicateSeq = 40054005
	maxSeqBumps      = 5 // QQ takes at most 5 passive replies per message anyway
)

var codeHints = map[int]string{
	codeAuthInvalid:  "Authorization rejected",
	codeTokenExpired: "access token expired or unknown",
	40034005:         "msg_id expired (outside the passive-reply window)",
	40034024:         "msg_id invalid",
	codeDuplicateSeq: "msg_seq already used for this msg_id",
	22009:            "message rate limit reached",
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

// textReply is a group or C2C text message. botgo's MessageToCreate drops
// msg_type 0 (omitempty); QQ documents it as required, so it is sent here.
type textReply struct {
	Content string `json:"content"`
	MsgType int    `json:"msg_type"`
	MsgID   string `json:"msg_id,omitempty"`
	MsgSeq  uint32 `json:"msg_seq,omitempty"`
}

// GetEventID implements dto.APIMessage.
func (textReply) GetEventID() string { return "" }

// GetSendType implements dto.APIMessage.
func (textReply) GetSendType() dto.SendType { return dto.Text }

// SendText is the qq channel's dispatcher: the text goes, split, as passive
// replies to the triggering message, to the route of its chat kind.
func (a *Adapter) SendText(ctx context.Context, req dispatch.RequestContext, text string) error {
	a.mu.Lock()
	started := a.started
	a.mu.Unlock()
	if !started {
		return fmt.Errorf("qq send: %w", errNotRunning)
	}
	parts := split.Split(text, MaxMessageChars)
	if len(parts) == 0 {
		return errors.New("qq send: the text is empty")
	}
	for i, part := range parts {
		if err := a.sendPart(ctx, req, part); err != nil {
			if len(parts) > 1 {
				return fmt.Errorf("part %d of %d of the reply: %w", i+1, len(parts), err)
			}
			return err
		}
	}
	return nil
}

// sendPart posts one message. msg_seq counts the replies to one msg_id, so
// every part and every chat_send for one message gets its own. It retries
// 5xx, 429 and network errors with backoff, and a rejected token once after
// dropping it; any other refusal is returned as it is (an *APIError).
func (a *Adapter) sendPart(ctx context.Context, req dispatch.RequestContext, text string) error {
	seq := a.seqs.next(req.MessageID)
	refreshed, uncertain, bumps := false, false, 0
	for attempt := 1; ; attempt++ {
		err := a.post(ctx, req, text, seq)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("qq send: %w", ctx.Err())
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
			return nil
		case isAPI && ae.Code == codeDuplicateSeq && bumps < maxSeqBumps:
			// The seq was used before (by an earlier process: the counter
			// lives in memory), so take the next one.
			bumps++
			seq = a.seqs.next(req.MessageID)
			continue
		case isAPI && ae.HTTPStatus < 500 && ae.HTTPStatus != http.StatusTooManyRequests:
			a.log.Error().Str("chatKey", req.ChatKey).Str("msgId", req.MessageID).Int("status", ae.HTTPStatus).
				Int("code", ae.Code).Str("message", ae.Message).Str("traceId", ae.TraceID).Msg("qq refused the message")
			return err
		}
		uncertain = uncertain || !isAPI || ae.HTTPStatus >= 500
		if attempt >= a.opts.MaxAttempts {
			a.log.Error().Err(err).Str("chatKey", req.ChatKey).Int("attempts", attempt).Msg("qq send failed")
			return fmt.Errorf("qq send failed after %d attempts: %w", attempt, err)
		}
		wait := adapters.Jitter(a.opts.RetryBase << (attempt - 1))
		a.log.Warn().Err(err).Str("chatKey", req.ChatKey).Dur("wait", wait).Msg("qq send failed; retrying")
		if !adapters.SleepCtx(ctx, wait) {
			return fmt.Errorf("qq send: %w", ctx.Err())
		}
	}
}

// post makes one API call. botgo's openapi client changes shared state on
// every call (auth header, trace id), so calls are serialised.
func (a *Adapter) post(ctx context.Context, req dispatch.RequestContext, text string, seq uint32) error {
	a.apiMu.Lock()
	defer a.apiMu.Unlock()
	var err error
	switch req.ChatType {
	case kindGroup:
		_, err = a.api.PostGroupMessage(ctx, req.ChatID, textReply{Content: text, MsgID: req.MessageID, MsgSeq: seq})
	case kindC2C:
		_, err = a.api.PostC2CMessage(ctx, req.ChatID, textReply{Content: text, MsgID: req.MessageID, MsgSeq: seq})
	case kindChannel:
		_, err = a.api.PostMessage(ctx, req.ChatID, &dto.MessageToCreate{Content: text, MsgID: req.MessageID, MsgSeq: seq})
	case kindDM:
		_, err = a.api.PostDirectMessage(ctx, &dto.DirectMessage{GuildID: req.ChatID},
			&dto.MessageToCreate{Content: text, MsgID: req.MessageID, MsgSeq: seq})
	default:
		return fmt.Errorf("qq send: unknown chat type %q", req.ChatType)
	}
	if err != nil {
		return describe(err)
	}
	return nil
}

// seqCounter hands out msg_seq values per msg_id, from 1. QQ takes passive
// replies for at most an hour, so entries older than two are forgotten.
type seqCounter struct {
	mu sync.Mutex
	m  map[string]*seqState
}

type seqState struct {
	n    uint32
	used time.Time
}

// next returns the next msg_seq for msgID (0 for an active message).
func (c *seqCounter) next(msgID string) uint32 {
	if msgID == "" {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if c.m == nil {
		c.m = make(map[string]*seqState)
	}
	st := c.m[msgID]
	if st == nil {
		if len(c.m) >= 5_000 {
			for id, s := range c.m {
				if now.Sub(s.used) > 2*time.Hour {
					delete(c.m, id)
				}
			}
		}
		st = &seqState{}
		c.m[msgID] = st
	}
	st.n++
	st.used = now
	return st.n
}
