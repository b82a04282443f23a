package faketelegram

import (
	"fmt"
	"slices"
	"time"
)

// Budget is how many messages a bot may post to one group, sends and edits
// together, in any Window. Telegram's Bot FAQ says a bot cannot send more
// than 20 messages a minute to a group; TDLib's maintainer adds that edits
// share that limit (tdlib/td#2592: "They share the limit"; tdlib/td#3034:
// "Limits for message editing and sending are shared"), and grammY's
// flood-limit docs (grammyjs/website#1076) put it as "up to 20 message
// edits in a minute per group chat". A forum's topics are one chat, so
// they share one budget. Calls over it get 429 with retry_after: the
// seconds until the oldest call in the window leaves it (real reports
// show 30 s and more once a bot is over).
type Budget struct {
	Calls  int           // 0: no budget (the default)
	Window time.Duration // 0 → one minute
}

// GroupCall is one call that spends a group's Budget, recorded while a
// budget is on.
type GroupCall struct {
	ChatID     int64
	Method     string
	At         time.Time
	RetryAfter int // > 0: refused with 429 and this retry_after
}

// spendsBudget reports the methods that post or change a message.
func spendsBudget(method string) bool {
	switch method {
	case "sendmessage", "sendphoto", "senddocument", "sendvideo", "sendaudio", "sendvoice", "sendmediagroup",
		"editmessagetext", "editmessagereplymarkup":
		return true
	}
	return false
}

// spend charges a call to its group's budget, or refuses it with 429 when
// the budget is spent. Groups are told by their negative ids, as Telegram
// numbers them.
func (s *Server) spend(method, key string, rq *request) *apiError {
	b := s.opts.GroupBudget
	chatID := rq.p.int("chat_id")
	if b.Calls <= 0 || chatID >= 0 || !spendsBudget(key) {
		return nil
	}
	window := b.Window
	if window <= 0 {
		window = time.Minute
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer broadcast(&s.eventCh)
	now := time.Now()
	var inWindow []time.Time
	for _, c := range s.groupCalls {
		if c.ChatID == chatID && c.RetryAfter == 0 && now.Sub(c.At) < window {
			inWindow = append(inWindow, c.At)
		}
	}
	call := GroupCall{ChatID: chatID, Method: method, At: now}
	if len(inWindow) < b.Calls {
		s.groupCalls = append(s.groupCalls, call)
		return nil
	}
	// The call may go once enough of the window's calls have left it.
	free := inWindow[len(inWindow)-b.Calls].Add(window)
	call.RetryAfter = max(1, int((free.Sub(now)+time.Second-1)/time.Second))
	s.groupCalls = append(s.groupCalls, call)
	return &apiError{status: 429, code: 429, desc: fmt.Sprintf("Too Many Requests: retry after %d", call.RetryAfter),
		params: &respParams{RetryAfter: call.RetryAfter}}
}

// GroupCalls returns the calls charged to groups' budgets (Options.GroupBudget),
// the refused ones included, oldest first.
func (s *Server) GroupCalls() []GroupCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.groupCalls)
}
