package fakeqq

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// knownMsg is a message the fake sent to the bot: replies may name it.
type knownMsg struct {
	kind string    // "group", "c2c", "channel" or "dm"
	at   time.Time // its timestamp, on the fake's clock
}

// linkPattern is what the fake takes for a link, as QQ does (public reports:
// "example.com", "1.sh" and even "crawler.py" are refused): an http, https
// or ftp scheme, or dot-separated labels whose last one starts with a
// letter. "3.14", "example[.]com" and "hxxps://x[.]io" pass.
var linkPattern = regexp.MustCompile(`(?i)\b(?:https?|ftp)://|[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.[a-z][a-z0-9-]*`)

// Links returns what the fake takes for links in text, in order.
func Links(text string) []string { return linkPattern.FindAllString(text, -1) }

// Advance moves the fake's clock on by d: message timestamps and reply
// windows follow it.
func (s *Server) Advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.skew += d
}

// Now is the time on the fake's clock.
func (s *Server) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nowLocked()
}

func (s *Server) nowLocked() time.Time { return s.opts.Now().Add(s.skew) }

// Rejected returns every message refused by QQ's rules so far, in order.
func (s *Server) Rejected() []Rejected {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Rejected(nil), s.rejected...)
}

// checkReplyLocked applies QQ's rules to a message about to be posted, in
// the order QQ reports them: the msg_id, its window, the msg_seq, the reply
// count, then the content. Only a message that passes all of them uses up a
// msg_seq and a reply.
func (s *Server) checkReplyLocked(kind, content, msgID string, msgSeq int) *apiError {
	v2 := kind == "group" || kind == "c2c"
	if msgID != "" {
		m, ok := s.known[msgID]
		if !ok {
			return qqError(v2, http.StatusBadRequest, CodeMsgIDInvalid, "请求参数msg_id无效或越权")
		}
		window := map[string]time.Duration{"group": GroupReplyWindow, "c2c": C2CReplyWindow}[kind]
		if window > 0 && s.nowLocked().Sub(m.at) > window {
			return qqError(v2, http.StatusBadRequest, CodeMsgIDExpired, "回复消息msg_id已过期")
		}
		if s.replied[msgID+"\x00"+strconv.Itoa(msgSeq)] {
			return qqError(v2, http.StatusBadRequest, CodeDuplicateSeq, "消息被去重，请检查请求msgseq")
		}
		if v2 && s.replies[msgID] >= MaxReplies {
			return qqError(v2, http.StatusBadRequest, CodeReplyLimit, "被动回复时间或次数超限")
		}
	}
	if links := Links(content); len(links) > 0 {
		if v2 {
			return qqError(v2, http.StatusBadRequest, CodeURLRefused, "消息发送失败, 不允许发送url "+strings.Join(links, ","))
		}
		return qqError(v2, http.StatusForbidden, CodeGuildURL, "url not allowed")
	}
	return nil
}

// acceptReplyLocked records that a reply to msgID with msgSeq went out.
func (s *Server) acceptReplyLocked(msgID string, msgSeq int) {
	if msgID == "" {
		return
	}
	s.replied[msgID+"\x00"+strconv.Itoa(msgSeq)] = true
	s.replies[msgID]++
}

// qqError is QQ's error answer. The v2 endpoints (groups, C2C) repeat the
// code as err_code and carry the trace id in the body as well as in the
// X-Tps-trace-ID header: {"message":…,"code":…,"err_code":…,"trace_id":…};
// the guild endpoints answer {"code":…,"message":…}. botgo hands the status
// and the raw body to the caller (errs.Err) for any non-2xx status.
func qqError(v2 bool, status, code int, message string) *apiError {
	e := &apiError{status: status, Code: code, Message: message}
	if v2 {
		e.ErrCode = code
	}
	return e
}
