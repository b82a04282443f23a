package ingress

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shipmyagent/ship/runtime/queue"
)

// ErrRateLimited is the sentinel behind every *RateLimitedError.
var ErrRateLimited = errors.New("sender over the message rate limit")

// RateLimitedError refuses a message whose sender sent more than the
// per-sender limit allows in its chat. It wraps ErrRateLimited.
type RateLimitedError struct {
	// RetryAfter is how long until a message of the same sender would be
	// taken.
	RetryAfter time.Duration
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("%v: try again in %s", ErrRateLimited, e.RetryAfter.Round(time.Second))
}

// Unwrap lets errors.Is(err, ErrRateLimited) match.
func (e *RateLimitedError) Unwrap() error { return ErrRateLimited }

// admit applies the rules a message meets after its dedupe and before it is
// logged, the same for every door: the per-sender limit, then the queue's
// room. Checking the queue here, before the log, means an API caller told
// "full" finds nothing of its message left behind.
func (in *Ingress) admit(ctx context.Context, s Submission) error {
	if key := s.sender(); in.limiter != nil && !s.Unlimited && key != "" {
		if ok, wait := in.limiter.Take(s.ChatKey, key); !ok {
			return &RateLimitedError{RetryAfter: wait}
		}
	}
	if in.budget != nil && !s.Unlimited {
		if err := in.budget(ctx, s); err != nil {
			return err
		}
	}
	if in.shared != nil {
		// The shared queue's room is the cluster's: asked of it when it
		// can tell before the message is logged (Room).
		if r, ok := in.shared.(Room); ok {
			if err := r.Admits(ctx); err != nil {
				return fmt.Errorf("queueing message: %w", err)
			}
		}
		return nil
	}
	if err := in.queue.Admits(s.ChatKey); err != nil {
		return fmt.Errorf("queueing message: %w", err)
	}
	return nil
}

// Room is what a Shared queue implements to say it is full before a
// message is logged (cluster mode: the stream holds queue.capacity items).
type Room interface {
	Admits(ctx context.Context) error
}

// sender is whom the per-sender limit counts a message against: the
// platform user, or for an API caller its label (userId) when it gave
// one, else the identity it authenticated as.
func (s Submission) sender() string {
	if s.Message.UserID != "" {
		return s.Message.UserID
	}
	return s.Turn.Identity
}

// refuse makes a refusal visible: logged, kept with the message where the
// source asks for it (KeepRefused), and handed to OnRefused. It returns err.
func (in *Ingress) refuse(ctx context.Context, s Submission, err error) error {
	in.log.Warn().Err(err).Str("chatKey", s.ChatKey).Str("messageId", s.Message.MessageID).
		Str("userId", s.Message.UserID).Msg("message refused")
	if s.KeepRefused {
		if e, uerr := userEntry(s); uerr == nil {
			if _, aerr := in.store.Append(ctx, e); aerr != nil {
				in.log.Error().Err(aerr).Str("chatKey", s.ChatKey).Msg("logging a refused message")
			} else {
				in.logRefusal(ctx, s.Request(), err)
				if in.observe != nil {
					in.observe(ctx, s)
				}
			}
		}
	}
	in.notifyRefused(ctx, s, err)
	return err
}

func (in *Ingress) notifyRefused(ctx context.Context, s Submission, err error) {
	if in.refused != nil {
		in.refused(ctx, s, err)
	}
}

// RefusalCode is the error code a refusal is reported with (events, API
// answers): RATE_LIMITED, QUEUE_FULL or SHUTTING_DOWN, the code a Budget
// refusal names itself (BUDGET_EXCEEDED); "" for any other error.
func RefusalCode(err error) string {
	var coded interface{ RefusalCode() string }
	switch {
	case errors.As(err, &coded):
		return coded.RefusalCode()
	case errors.Is(err, ErrRateLimited):
		return "RATE_LIMITED"
	case errors.Is(err, queue.ErrQueueFull):
		return "QUEUE_FULL"
	case errors.Is(err, queue.ErrQueueStopped):
		return "SHUTTING_DOWN"
	}
	return ""
}
