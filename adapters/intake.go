package adapters

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/ingress"
)

// noteTimeout bounds one note of the adapter's own (a command's answer, a
// busy note), so a stuck platform cannot hold a worker forever.
const noteTimeout = 30 * time.Second

// overloadedText is what a user hears when the queue cannot take their
// message at all.
const overloadedText = "I'm overloaded right now and can't take your message. Please try again in a minute."

// tooFastText is what a sender over the per-sender limit hears, at most
// once per limitNoteEvery in a chat: the note itself must not become a way
// to make the bot flood a group.
const tooFastText = "You're sending messages faster than I can answer, so I skipped some. Please wait a moment, then send your question again."

// limitNoteEvery spaces the notes one sender gets for being over the limit.
const limitNoteEvery = time.Minute

// Intake is the tail every platform's message handler ends in, written once:
// answer a command, log an unaddressed message, or accept an addressed one
// and tell the user when it is a duplicate (nothing), refused (busy) or
// waiting in line (a busy note after BusyAfter). Notes go out in the
// background, through Workers, so the poll loop or webhook handler that
// called Take never waits for a send: one chat paused by a platform's rate
// limit must not stall intake for every chat.
type Intake struct {
	Host Host
	// Send delivers a note of the adapter's own through the same paced path
	// as replies.
	Send    func(ctx context.Context, req dispatch.RequestContext, text string) error
	Workers *Workers
	// BusyNote enables "your message is #N in line" notes, sent when a
	// message still waits BusyAfter after it was accepted (0 → 3 s).
	BusyNote  bool
	BusyAfter time.Duration
	// BusySend, when set, sends busy notes instead of Send. A platform that
	// takes only a few replies per message keeps them for the answer with
	// it: it may skip the note (and return nil).
	BusySend func(ctx context.Context, req dispatch.RequestContext, text string) error
	Log      zerolog.Logger

	busy    busyNotes
	limited busyNotes // "too fast" notes, per chat and sender
}

// Arrival is one normalized platform message, as a handler hands it to Take.
type Arrival struct {
	ingress.Submission
	// Addressed says the bot is meant: a private chat, or a group message
	// that mentions or replies to it, or a command for it.
	Addressed bool
	// Command is the command's name ("status") when the text is one.
	Command string
}

// Take hands a message on. It returns an error only when the message could
// not be recorded, so the platform must not be acknowledged and will
// deliver it again.
func (in *Intake) Take(ctx context.Context, a Arrival) error {
	req := a.Request()
	if a.Addressed && a.Command != "" {
		if reply, ok := in.Host.Command(ctx, a.Command, commandArgs(a.Message.Text), req); ok {
			// An empty reply: the core answers the whole chat itself (an
			// approval starts a turn, a denial is announced).
			if reply != "" {
				in.note(req, reply)
			}
			return nil
		}
	}
	if !a.Addressed {
		// Logged, so chat_load_history sees the whole conversation.
		err := in.Host.Record(ctx, a.Submission)
		if errors.Is(err, ingress.ErrDuplicate) {
			return nil
		}
		return err
	}
	t, err := in.Host.Accept(ctx, a.Submission)
	switch {
	case errors.Is(err, ingress.ErrDuplicate):
		in.Log.Debug().Str("chatKey", a.ChatKey).Str("messageId", a.Message.MessageID).Msg("re-delivered message ignored")
		return nil
	case errors.Is(err, ingress.ErrRateLimited):
		// Logged with its refusal; say so once in a while, never per message.
		if in.limited.allowEvery(a.ChatKey+"\x00"+a.Message.UserID, limitNoteEvery) {
			in.note(req, tooFastText)
		}
		return nil
	case ingress.IsBusy(err):
		// The message is logged; tell the user rather than stay silent.
		in.note(req, overloadedText)
		return nil
	case err != nil:
		return err
	}
	if t.Position > 0 && in.BusyNote {
		in.noteIfStillWaiting(t.ID, req)
	}
	return nil
}

// commandArgs is what follows a command's name ("/approve 7KQ2" → "7KQ2").
func commandArgs(text string) string {
	_, args, _ := strings.Cut(strings.TrimSpace(text), " ")
	return strings.TrimSpace(args)
}

// note sends text in the background; failures are only logged.
func (in *Intake) note(req dispatch.RequestContext, text string) {
	in.Workers.Go(func(ctx context.Context) { in.send(ctx, req, text) })
}

// noteIfStillWaiting tells the chat its place in line if the message has
// not started after BusyAfter: a short wait needs no note.
func (in *Intake) noteIfStillWaiting(id string, req dispatch.RequestContext) {
	after := in.BusyAfter
	if after <= 0 {
		after = 3 * time.Second
	}
	in.Workers.GoAfter(after, func(ctx context.Context) {
		pos, ok := in.Host.Position(id)
		if !ok || pos == 0 || !in.busy.Allow(req.ChatKey) {
			return
		}
		send := in.Send
		if in.BusySend != nil {
			send = in.BusySend
		}
		in.sendWith(ctx, send, req, BusyText(pos))
	})
}

func (in *Intake) send(ctx context.Context, req dispatch.RequestContext, text string) {
	in.sendWith(ctx, in.Send, req, text)
}

func (in *Intake) sendWith(ctx context.Context, send func(context.Context, dispatch.RequestContext, string) error, req dispatch.RequestContext, text string) {
	ctx, cancel := context.WithTimeout(ctx, noteTimeout)
	defer cancel()
	if err := send(ctx, req, text); err != nil {
		in.Log.Warn().Err(err).Str("chatKey", req.ChatKey).Msg("sending a note failed")
	}
}

// BusyText is the note a chat gets when its message waits behind others.
func BusyText(position int) string {
	return fmt.Sprintf("I'm busy right now: your message is #%d in line. I'll answer as soon as I can.", position)
}

// busyNotes decides when a chat is told that its message waits in line: at
// most once per chat per Every, so a busy queue does not turn into spam.
type busyNotes struct {
	Every time.Duration // 0 → 30 s
	Now   func() time.Time

	mu   sync.Mutex
	last map[string]time.Time
}

// Allow reports whether chatKey may get a busy note now, and if so records
// that it got one.
func (b *busyNotes) Allow(chatKey string) bool { return b.allowEvery(chatKey, b.Every) }

// allowEvery is Allow with its own spacing (0 → 30 s), for keys other
// than a chat's.
func (b *busyNotes) allowEvery(chatKey string, every time.Duration) bool {
	if every <= 0 {
		every = 30 * time.Second
	}
	now := time.Now()
	if b.Now != nil {
		now = b.Now()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last == nil {
		b.last = make(map[string]time.Time)
	}
	if t, ok := b.last[chatKey]; ok && now.Sub(t) < every {
		return false
	}
	// Forget old entries now and then so the map stays small.
	if len(b.last) > 10_000 {
		for k, t := range b.last {
			if now.Sub(t) >= every {
				delete(b.last, k)
			}
		}
	}
	b.last[chatKey] = now
	return true
}
