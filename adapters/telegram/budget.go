package telegram

import (
	"context"
	"errors"
	"time"

	"golang.org/x/time/rate"

	"github.com/shipmyagent/ship/runtime/dispatch"
)

// errGroupBusy is why a preview in a group waits: the group's budget has
// no turn to spare for it now.
var errGroupBusy = errors.New("the group's message budget is spent for now")

// spendsBudget reports the calls that post or change a message: in a group
// they all take from its one budget (see Limits).
func spendsBudget(method string) bool {
	switch method {
	case "sendMessage", "editMessageText", "editMessageReplyMarkup", "sendPhoto", "sendDocument", "sendVideo",
		"sendAudio", "sendVoice", "sendMediaGroup":
		return true
	}
	return false
}

// takeTurn takes a turn from the group's limiter for a call that spends its
// budget; other calls and private chats pass. A call that must go (persist:
// a finished reply) waits for its turn. A preview takes one only when it is
// free now and another stays free after it, so that previews never eat the
// turns the finished replies of the group's other topics need; otherwise
// it returns *dispatch.RetryAfter with the time until then, and the stream
// shows its newest text after that (fewer updates while the group is busy).
func (s *sender) takeTurn(ctx context.Context, chatID int64, method string, persist bool) error {
	if !isGroup(chatID) || !spendsBudget(method) {
		return nil
	}
	lim := s.pace(chatID, true).lim
	if persist {
		return lim.Wait(ctx)
	}
	if wait, ok := previewTurn(lim, time.Now()); !ok {
		return &dispatch.RetryAfter{Wait: wait, Err: errGroupBusy}
	}
	return nil
}

// previewTurn takes a turn from lim at now if one is free with another to
// spare; otherwise it says how long until that is so.
func previewTurn(lim *rate.Limiter, now time.Time) (time.Duration, bool) {
	if lim.Limit() == rate.Inf {
		return 0, true
	}
	need := min(2, float64(lim.Burst()))
	if have := lim.TokensAt(now); have < need {
		wait := time.Duration((need - have) / float64(lim.Limit()) * float64(time.Second))
		return max(wait, time.Millisecond), false
	}
	if !lim.AllowN(now, 1) { // another call took it meanwhile
		return time.Duration(float64(time.Second) / float64(lim.Limit())), false
	}
	return 0, true
}

// groupInterval is the least time between two updates of one reply being
// written in a group: one turn of the group's limiter (about 3.5 s with the
// default limits), never less than the stream interval.
func (s *sender) groupInterval(streamInterval time.Duration) time.Duration {
	l := s.limits.PerGroup
	if l == rate.Inf || l <= 0 {
		return streamInterval
	}
	return max(streamInterval, time.Duration(float64(time.Second)/float64(l)))
}
