package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Streamer is a Dispatcher that can show a reply while the model is still
// writing it (Telegram drafts and edits, a Feishu card). The core finds it on
// the registered dispatcher by type assertion; a platform without it gets
// each reply whole, as before.
type Streamer interface {
	// OpenStream starts a reply in req's chat. resume holds the ids of the
	// messages an interrupted earlier attempt of the same run left visible
	// (from the journal): the stream takes them over, so that after a crash
	// the chat ends with one complete reply and no truncated one. ok is
	// false when this chat does not stream (streaming off, or no way to in
	// this kind of chat): the reply then goes whole through SendText.
	OpenStream(ctx context.Context, req RequestContext, resume []string) (s ReplyStream, ok bool)
}

// ReplyStream is one reply shown while it is written. Its methods are called
// from one goroutine at a time, never concurrently.
type ReplyStream interface {
	// Show makes the chat show text, the whole reply so far. It returns the
	// ids of every message of this reply now visible in the chat (drafts
	// are not messages: a stream that only drafts returns none). An error
	// wrapping *RetryAfter asks the caller to wait before the next Show;
	// any other error stops the showing, and the reply is then delivered
	// by Finish as usual.
	Show(ctx context.Context, text string) (visible []string, err error)
	// Finish makes the chat show exactly text as the complete reply,
	// reusing the messages Show (or resume) left, sending what is missing
	// and deleting what is left over. It reports like SendTextReport.
	Finish(ctx context.Context, text string) (Delivery, error)
	// Abandon removes whatever Show left visible: the reply was not
	// delivered (the run failed before the tool call finished).
	Abandon(ctx context.Context) error
	// Interval is the least time between two Show calls (the platform's
	// edit rate), e.g. one second.
	Interval() time.Duration
}

// RemoveShown takes the messages (ids) of a reply left unfinished out of
// req's chat (after a run that failed, or a crash), where d can stream;
// elsewhere there is nothing to remove.
func RemoveShown(ctx context.Context, d Dispatcher, req RequestContext, ids []string) error {
	st, ok := d.(Streamer)
	if !ok || len(ids) == 0 {
		return nil
	}
	rs, ok := st.OpenStream(ctx, req, ids)
	if !ok {
		return nil
	}
	return rs.Abandon(ctx)
}

// RetryAfter is a platform's request to wait (Telegram's 429 retry_after).
type RetryAfter struct {
	Wait time.Duration
	Err  error
}

func (e *RetryAfter) Error() string {
	return fmt.Sprintf("rate limited: retry after %s: %v", e.Wait, e.Err)
}

func (e *RetryAfter) Unwrap() error { return e.Err }

// RetryAfterOf returns the wait err asks for, if it wraps a *RetryAfter.
func RetryAfterOf(err error) (time.Duration, bool) {
	var ra *RetryAfter
	if errors.As(err, &ra) {
		return ra.Wait, true
	}
	return 0, false
}

// Typist is a Dispatcher that can show that the bot is working on the
// message of req (Telegram's "typing…", a reaction on Feishu).
type Typist interface {
	// StartTyping shows it until stop is called; stop undoes what it can
	// (removes a reaction) and is safe to call more than once. The
	// platform keeps a repeating indicator alive itself. Errors are the
	// platform's to log: typing must never cost a reply.
	StartTyping(ctx context.Context, req RequestContext) (stop func(context.Context))
}

// TypingCleaner is a Typist whose indicator can outlive a crash (a Feishu
// reaction). At start-up the engine calls ClearTyping for every message a
// crashed run was working on, so nothing is left "typing".
type TypingCleaner interface {
	ClearTyping(ctx context.Context, req RequestContext) error
}
