package faketelegram

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"time"
)

// poller is one getUpdates request being answered; kicked is closed when a
// newer getUpdates request replaces it.
type poller struct{ kicked chan struct{} }

// defaultExcluded are the update types not delivered unless asked for.
var defaultExcluded = map[string]bool{"chat_member": true, "message_reaction": true, "message_reaction_count": true}

// getUpdates confirms updates below offset, then answers up to limit queued
// updates, holding the request up to timeout seconds while there are none.
func (s *Server) getUpdates(rq *request) (any, *apiError) {
	s.pollBegin()
	defer s.pollEnd()
	p := rq.p
	offset, timeout := p.int("offset"), p.int("timeout")
	limit := p.int("limit")
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	allowed, hasAllowed := parseAllowed(p["allowed_updates"])
	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(time.Duration(timeout) * time.Second)
		defer t.Stop()
		timer = t.C
	}

	s.mu.Lock()
	if s.hookURL != "" {
		s.mu.Unlock()
		return nil, errWebhookActive
	}
	if hasAllowed {
		s.setAllowedLocked(allowed)
		s.recordAskedLocked(allowed)
	}
	me := &poller{kicked: make(chan struct{})}
	if s.poller != nil {
		close(s.poller.kicked)
	}
	s.poller = me
	s.confirmLocked(offset)
	expired := false
	for {
		var e *apiError
		select {
		case <-me.kicked:
			e = errTerminated
			s.conflicts++
		default:
			if s.hookURL != "" {
				e = errWebhookActive
			}
		}
		var res []json.RawMessage
		if e == nil {
			res = s.collectLocked(int(limit))
		}
		if e != nil || len(res) > 0 || timer == nil || expired || s.closed {
			if s.poller == me {
				s.poller = nil
			}
			s.mu.Unlock()
			return res, e
		}
		ch := s.updatesCh
		s.holding++
		broadcast(&s.holdCh)
		s.mu.Unlock()
		gone := false
		select {
		case <-ch:
		case <-timer:
			expired = true
		case <-me.kicked:
		case <-s.done:
		case <-rq.r.Context().Done():
			gone = true
		}
		s.mu.Lock()
		s.holding--
		if gone {
			if s.poller == me {
				s.poller = nil
			}
			s.mu.Unlock()
			return []json.RawMessage{}, nil // nobody is listening
		}
	}
}

// confirmLocked drops the updates that offset confirms: those below a
// positive offset, or all but the last -offset ones for a negative offset.
func (s *Server) confirmLocked(offset int64) {
	switch {
	case offset > 0:
		i := 0
		for i < len(s.queue) && s.queue[i].id < offset {
			i++
		}
		s.queue = slices.Delete(s.queue, 0, i)
	case offset < 0 && int64(len(s.queue)) > -offset:
		s.queue = slices.Delete(s.queue, 0, len(s.queue)-int(-offset))
	}
}

// collectLocked drops queued updates of types not allowed and returns the
// first limit of the others (always non-nil).
func (s *Server) collectLocked(limit int) []json.RawMessage {
	s.queue = slices.DeleteFunc(s.queue, func(q queued) bool { return !s.allowedLocked(q.kind) })
	out := []json.RawMessage{}
	for _, q := range s.queue[:min(limit, len(s.queue))] {
		out = append(out, q.raw)
	}
	return out
}

func (s *Server) allowedLocked(kind string) bool {
	if s.allowed == nil {
		return !defaultExcluded[kind]
	}
	return s.allowed[kind]
}

// updateTypes are the update types the real server knows.
var updateTypes = []string{"message", "edited_message", "channel_post", "edited_channel_post",
	"business_connection", "business_message", "edited_business_message", "deleted_business_messages",
	"message_reaction", "message_reaction_count", "inline_query", "chosen_inline_result", "callback_query",
	"shipping_query", "pre_checkout_query", "purchased_paid_media", "poll", "poll_answer", "my_chat_member",
	"chat_member", "chat_join_request", "chat_boost", "removed_chat_boost"}

// parseAllowed reads allowed_updates as the real server does: only a JSON
// array of strings changes the setting (ok); anything else, "null"
// included, keeps the previous one.
func parseAllowed(v string) (list []string, ok bool) {
	if strings.TrimSpace(v) == "" {
		return nil, false
	}
	if err := json.Unmarshal([]byte(v), &list); err != nil || strings.TrimSpace(v) == "null" {
		return nil, false
	}
	return list, true
}

// recordAskedLocked remembers the allowed_updates list the client sent (for
// AllowedUpdates); an empty list is recorded as empty, not as unset.
func (s *Server) recordAskedLocked(list []string) {
	s.asked, s.askedOK = slices.Clone(list), true
	if s.asked == nil {
		s.asked = []string{}
	}
}

// setAllowedLocked applies allowed_updates: names in any case, unknown ones
// ignored; a list without a known name means the default set.
func (s *Server) setAllowedLocked(list []string) {
	s.allowed = nil
	for _, k := range list {
		if k = strings.ToLower(k); slices.Contains(updateTypes, k) {
			if s.allowed == nil {
				s.allowed = map[string]bool{}
			}
			s.allowed[k] = true
		}
	}
}

func validSecret(v string) *apiError {
	if len(v) > 256 {
		return badRequest("secret token is too long")
	}
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return badRequest("secret token contains unallowed characters")
		}
	}
	return nil
}

// setWebhook sets (or, with an empty url, removes) the webhook. Unlike the
// real server it accepts http URLs on any port, so that a loopback test
// server can receive the updates.
func (s *Server) setWebhook(rq *request) (any, *apiError) {
	raw := strings.TrimSpace(rq.p["url"])
	if raw == "" {
		return s.deleteWebhook(rq)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, badRequest("bad webhook: An HTTPS URL must be provided for webhook")
	}
	secret := rq.p["secret_token"]
	if e := validSecret(secret); e != nil {
		return nil, e
	}
	allowed, hasAllowed := parseAllowed(rq.p["allowed_updates"])
	s.mu.Lock()
	defer s.mu.Unlock()
	if hasAllowed {
		s.setAllowedLocked(allowed)
		s.recordAskedLocked(allowed)
		s.hookAllowed = allowed
	}
	if rq.p.bool("drop_pending_updates") {
		s.queue = nil
	}
	same := s.hookURL == raw && s.hookSecret == secret
	s.hookURL, s.hookSecret = raw, secret
	broadcast(&s.updatesCh) // a held getUpdates now answers 409
	if same {
		return described{true, "Webhook is already set"}, nil
	}
	return described{true, "Webhook was set"}, nil
}

// deleteWebhook removes the webhook; drop_pending_updates drops the queue.
func (s *Server) deleteWebhook(rq *request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rq.p.bool("drop_pending_updates") {
		s.queue = nil
	}
	was := s.hookURL != ""
	s.hookURL, s.hookSecret, s.hookAllowed = "", "", nil
	broadcast(&s.updatesCh)
	if was {
		return described{true, "Webhook was deleted"}, nil
	}
	return described{true, "Webhook is already deleted"}, nil
}

func (s *Server) getWebhookInfo(*request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	info := map[string]any{"url": s.hookURL, "has_custom_certificate": false, "pending_update_count": len(s.queue)}
	if s.hookURL != "" {
		info["max_connections"] = 40
		info["ip_address"] = "127.0.0.1"
		if len(s.hookAllowed) > 0 {
			info["allowed_updates"] = s.hookAllowed
		}
	}
	return info, nil
}
