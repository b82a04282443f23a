package qq

import (
	"errors"
	"fmt"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/tencent-connect/botgo/dto"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/runtime/dispatch"
)

// replyRule is QQ's passive-reply rule for one kind of chat: a reply must
// come within window after the user's message, and one message takes at
// most max replies. A zero field is not checked here; QQ's answer decides.
type replyRule struct {
	window time.Duration
	max    int
}

// replyRules are QQ's documented rules (bot.q.qq.com, "发送消息"): groups 5
// minutes and 5 replies, C2C chats 60 minutes and 5 replies. Guild channels
// document a 5-minute window but no per-message count, guild DMs no count
// limit: for both, QQ's refusal (304103 or 40034005) is mapped instead.
var replyRules = map[string]replyRule{
	kindGroup: {window: 5 * time.Minute, max: 5},
	kindC2C:   {window: 60 * time.Minute, max: 5},
}

// answerReserve is how many of a message's replies are kept for the answer
// where QQ counts them: a busy note goes out only if it leaves this many,
// so it can never take a reply the answer needs (4 replies hold 8,000
// characters; a longer answer is refused with the length that fits).
const answerReserve = 4

// ledgerSize bounds the messages remembered. Entries matter for at most an
// hour (the longest window); the oldest go first.
const ledgerSize = 20_000

// errNoteSkipped: a busy note would take a reply the answer may need.
var errNoteSkipped = errors.New("busy note skipped: the message's replies are kept for the answer")

// replyState is what the adapter knows about one message it may reply to.
type replyState struct {
	at     time.Time // when the user sent it; zero: unknown (e.g. after a restart)
	seq    uint32    // the last msg_seq handed out
	used   int       // replies sent or being sent
	closed error     // QQ refused a reply for good (window or count)
}

// ledger remembers, per message id, when the message was sent and which
// replies it had: the time travels from the event (handle.go) to the send
// path this way, since a RequestContext carries no time. It lives in
// memory; after a restart QQ's own answers take over.
type ledger struct {
	now func() time.Time
	mu  sync.Mutex
	m   *lru.Cache[string, *replyState]
}

func newLedger(now func() time.Time) *ledger {
	m, _ := lru.New[string, *replyState](ledgerSize) // fails only for a size ≤ 0
	return &ledger{now: now, m: m}
}

// stateLocked returns id's entry, made when missing.
func (l *ledger) stateLocked(id string) *replyState {
	st, ok := l.m.Get(id)
	if !ok {
		st = &replyState{}
		l.m.Add(id, st)
	}
	return st
}

// arrived records when message id was sent: its timestamp when QQ gave one,
// else now. A re-delivery keeps the first time.
func (l *ledger) arrived(id string, ts dto.Timestamp) {
	at, err := ts.Time()
	if ts == "" || err != nil {
		at = l.now()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if st := l.stateLocked(id); st.at.IsZero() {
		st.at = at
	}
}

// nextSeq returns the next msg_seq for a reply to id, from 1 (0 for an
// active message).
func (l *ledger) nextSeq(id string) uint32 {
	if id == "" {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.stateLocked(id)
	st.seq++
	return st.seq
}

// claim takes the replies one send to message id needs. plan gets how many
// replies are left (-1: no limit) and returns how many parts the text takes
// in that many, or an error when it cannot fit. A note (the busy note) is
// refused with errNoteSkipped unless it leaves answerReserve replies. Past
// the window, after QQ closed the message, or with no reply left, the error
// wraps dispatch.ErrReplyExpired or ErrReplyLimit.
func (l *ledger) claim(kind, id string, note bool, plan func(left int) (int, error)) error {
	rule := replyRules[kind]
	if id == "" {
		_, err := plan(-1)
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.stateLocked(id)
	if st.closed != nil {
		return st.closed
	}
	if age := l.now().Sub(st.at); rule.window > 0 && !st.at.IsZero() && age > rule.window {
		return fmt.Errorf("QQ takes replies to a %s message for %s, and this one was sent %s ago: %w",
			kindName(kind), minutes(rule.window), age.Round(time.Second), dispatch.ErrReplyExpired)
	}
	left := -1
	if rule.max > 0 {
		left = max(rule.max-st.used, 0)
		if note && left-1 < answerReserve {
			return errNoteSkipped
		}
		if left == 0 {
			return fmt.Errorf("QQ takes at most %d replies to one message, and all %d have been sent: %w",
				rule.max, rule.max, dispatch.ErrReplyLimit)
		}
	}
	n, err := plan(left)
	if err != nil {
		return err
	}
	st.used += n
	return nil
}

// release gives back n replies claimed but not sent.
func (l *ledger) release(id string, n int) {
	if id == "" || n <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.stateLocked(id)
	st.used = max(st.used-n, 0)
}

// close records that QQ refused a reply to id for good: later sends fail at
// once with err.
func (l *ledger) close(id string, err error) {
	if id == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stateLocked(id).closed = err
}

func kindName(kind string) string {
	if kind == kindC2C {
		return "C2C"
	}
	return kind
}

func minutes(d time.Duration) string { return fmt.Sprintf("%d minutes", int(d.Minutes())) }

// The adapter tells the core how a post ship makes on its own reaches a
// QQ chat, and why one may be refused.
var (
	_ adapters.TaskRouter    = (*Adapter)(nil)
	_ adapters.ReplyWindowed = (*Adapter)(nil)
)

// TaskRoute is a passive reply to last: QQ takes a bot's message only as a
// reply to a person's recent one, so a post ship makes on its own (a
// scheduled task's result) answers the chat's latest message, and works
// while that message's window is open.
func (a *Adapter) TaskRoute(last dispatch.RequestContext) dispatch.RequestContext { return last }

// ReplyWindowHint is QQ's rule for passive replies (replyRules), for a
// person reading why a task's result did not reach the chat: the refusal
// itself says only that the window closed.
func (a *Adapter) ReplyWindowHint(dispatch.RequestContext) string {
	return fmt.Sprintf("QQ takes a bot's message only as a reply to a user's message: within %d minutes of it in groups, %d in C2C chats",
		int(replyRules[kindGroup].window.Minutes()), int(replyRules[kindC2C].window.Minutes()))
}
