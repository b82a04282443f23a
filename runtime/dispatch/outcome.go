package dispatch

import (
	"context"
	"errors"
	"fmt"
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

// PartError is a reply that went out in parts (a long text split at the
// platform's limit) of which part Part (from 1) of Parts was not
// delivered: the parts before it were, the ones after it were not tried.
// Dispatchers return one so that the chat log and the run's watchers can
// say how much of the reply the user has; a stream whose failed Finish is
// abandoned (its parts deleted) must not, since none of it stays.
type PartError struct {
	Part, Parts int
	Err         error
}

// Error says which part failed and why.
func (e *PartError) Error() string {
	return fmt.Sprintf("part %d of %d not delivered: %v", e.Part, e.Parts, e.Err)
}

// Unwrap returns the platform's error.
func (e *PartError) Unwrap() error { return e.Err }

// Undelivered describes a reply that did not reach the user: the platform's
// reason, and when only some parts went out, which part failed (0 when
// none did or the reply was one part).
type Undelivered struct {
	Err         error
	Part, Parts int
}

// Reason is the platform's own words about the failed send, without the
// part it concerns.
func (u Undelivered) Reason() string {
	var pe *PartError
	if errors.As(u.Err, &pe) {
		return pe.Err.Error()
	}
	return u.Err.Error()
}

// String is the line the chat log and the run's watchers show: "reply not
// delivered: …", or "part 2 of 3 not delivered: …" when the parts before
// it did arrive.
func (u Undelivered) String() string {
	if u.Part > 0 {
		return fmt.Sprintf("part %d of %d not delivered: %s", u.Part, u.Parts, u.Reason())
	}
	return "reply not delivered: " + u.Reason()
}

func undelivered(err error) Undelivered {
	u := Undelivered{Err: err}
	var pe *PartError
	if errors.As(err, &pe) && pe.Part > 1 { // part 1: nothing arrived
		u.Part, u.Parts = pe.Part, pe.Parts
	}
	return u
}

// Refusals follows the replies of one run: which of them did not reach the
// user (a platform refused it, by its reply rules or otherwise, or it could
// not be sent at all), and whether one was delivered after the last
// failure. The Runner puts one in the run's context (WithRefusals); the
// Deliverer notes every send in it.
type Refusals struct {
	mu   sync.Mutex
	last error
}

// WithRefusals returns a context that carries a new Refusals.
func WithRefusals(ctx context.Context) (context.Context, *Refusals) {
	rs := &Refusals{}
	return with(ctx, func(r *Run) { r.Refusals = rs }), rs
}

// note records the outcome of one send.
func (r *Refusals) note(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// A reply that got through after a failure means the run recovered
	// (the model sent it again, or the final-output fallback did).
	r.last = err
}

// Unresolved describes the last reply that was not delivered when no reply
// was delivered after it: the user is missing (part of) the answer. ok is
// false otherwise.
func (r *Refusals) Unresolved() (u Undelivered, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		return Undelivered{}, false
	}
	return undelivered(r.last), true
}

// noteSend records err in the Refusals ctx carries, if any.
func noteSend(ctx context.Context, err error) {
	if r, _ := RunFrom(ctx); r.Refusals != nil {
		r.Refusals.note(err)
	}
}
