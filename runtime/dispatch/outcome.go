package dispatch

import (
	"context"
	"errors"
	"sync"
)

// Refusals by a platform's reply rules. A dispatcher wraps one of them (with
// %w, next to the platform's own error) when the platform will not take a
// reply to the message being answered, so that the Deliverer and the run can
// tell it from a transient failure: the user will not get the reply, and
// sending it again will not help.
var (
	// ErrReplyExpired: the time in which the platform takes replies to the
	// message has passed (QQ: 5 minutes in groups, 60 in C2C chats).
	ErrReplyExpired = errors.New("the platform's reply window for this message has closed")
	// ErrReplyLimit: the platform takes no more replies to the message, or
	// not as many as the text needs (QQ: at most 5 per message).
	ErrReplyLimit = errors.New("the platform's reply limit for this message is reached")
)

// IsReplyRefused reports whether err is a refusal by the platform's reply
// rules (ErrReplyExpired or ErrReplyLimit).
func IsReplyRefused(err error) bool {
	return errors.Is(err, ErrReplyExpired) || errors.Is(err, ErrReplyLimit)
}

// Delivery is what a platform tells about a text it delivered, beyond that
// it did: the text counts as delivered, and chat_send says so, but the model
// is told what differs.
type Delivery struct {
	// Sent is the text as the user got it when the platform had to change
	// it (links made non-clickable, say); "" when it went out as given.
	Sent string
	// Notices are for the model, one sentence each ("links were altered
	// …", "QQ takes 1 more reply to this message").
	Notices []string
}

// Reporter is a Dispatcher that can tell more than success: the Deliverer
// calls SendTextReport instead of SendText when a dispatcher has it. It is
// optional, so dispatchers that have nothing to report stay as they are.
type Reporter interface {
	Dispatcher
	SendTextReport(ctx context.Context, req RequestContext, text string) (Delivery, error)
}

type refusalsKey struct{}

// Refusals follows the replies of one run: which of them a platform's reply
// rules refused, and whether one was delivered after the last refusal. The
// Runner puts one in the run's context (WithRefusals); the Deliverer notes
// every send in it.
type Refusals struct {
	mu   sync.Mutex
	last error
}

// WithRefusals returns a context that carries a new Refusals.
func WithRefusals(ctx context.Context) (context.Context, *Refusals) {
	r := &Refusals{}
	return context.WithValue(ctx, refusalsKey{}, r), r
}

// note records the outcome of one send.
func (r *Refusals) note(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err == nil:
		r.last = nil // a reply got through after it: the run recovered
	case IsReplyRefused(err):
		r.last = err
	}
}

// Unresolved is the last refusal when no reply was delivered after it: the
// user is missing (part of) the answer. It is nil otherwise.
func (r *Refusals) Unresolved() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// noteSend records err in the Refusals ctx carries, if any.
func noteSend(ctx context.Context, err error) {
	if r, ok := ctx.Value(refusalsKey{}).(*Refusals); ok {
		r.note(err)
	}
}
