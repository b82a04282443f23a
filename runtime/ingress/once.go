package ingress

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shipmyagent/ship/runtime/chat"
)

// ErrDuplicate is returned by Submit (with Once) for a message that was already
// accepted: platforms re-deliver (Telegram after a restart, Feishu when an
// ack is slow, QQ on resume) and a user must never get two answers.
var ErrDuplicate = errors.New("message already accepted")

// historyCheck is how far back in a chat's log the door looks for a
// message it no longer remembers. Re-deliveries concern recent messages.
const historyCheck = 200

// seenKey names a platform message in the seen set.
func seenKey(chatKey, messageID string) string { return chatKey + "\x00" + messageID }

// acceptOnce is the dedupe step of the door, for messages that may come
// more than once (Submission.Once). A message id seen before — in this
// process, or in the chat's log from an earlier one — is not accepted
// again (ErrDuplicate). One exception keeps a crash from losing a message:
// if the log has it but no reply to it, the earlier process died before
// answering, so it is queued again (without logging it twice).
func (in *Ingress) acceptOnce(ctx context.Context, s Submission) (Ticket, error) {
	id := s.Message.MessageID
	if id == "" {
		return in.accept(ctx, s)
	}
	var t Ticket
	err := in.once(ctx, s.ChatKey, id, stateAnswered, func(state logState) (err error) {
		if state == stateUnanswered {
			in.log.Warn().Str("chatKey", s.ChatKey).Str("messageId", id).
				Msg("re-delivered message was logged but never answered (crash?): running it now")
			s.prepare(ctx)
			t, err = in.enqueue(ctx, s, false)
			return err
		}
		t, err = in.accept(ctx, s)
		return err
	})
	return t, err
}

// once runs take for message id of chatKey unless it was seen before: in
// this process, by another replica (the claim), or in the chat's log in a
// state at or past dup. The message is remembered as seen, and its claim
// kept, unless take fails.
func (in *Ingress) once(ctx context.Context, chatKey, id string, dup logState, take func(logState) error) error {
	key := seenKey(chatKey, id)
	if known, _ := in.seen.ContainsOrAdd(key, struct{}{}); known {
		return ErrDuplicate
	}
	if err := in.claim(ctx, key); err != nil {
		in.seen.Remove(key)
		return err
	}
	state, err := in.logState(ctx, chatKey, id)
	if err == nil && state >= dup {
		in.unclaim(ctx, key, true)
		return ErrDuplicate
	}
	if err == nil {
		err = take(state)
	}
	if err != nil {
		in.seen.Remove(key)
	}
	in.unclaim(ctx, key, err == nil)
	return err
}

// unclaimTimeout bounds settling a claim after the caller's context ended.
const unclaimTimeout = 5 * time.Second

// claim reserves key cluster-wide (cluster mode); ErrDuplicate when
// another replica took it.
func (in *Ingress) claim(ctx context.Context, key string) error {
	if in.claims == nil {
		return nil
	}
	ok, err := in.claims.Claim(ctx, key)
	if err != nil {
		return fmt.Errorf("checking for a re-delivered message: %w", err)
	}
	if !ok {
		return ErrDuplicate
	}
	return nil
}

// unclaim settles a claim: taken for good, or given back. It outlives
// ctx: a message refused because its caller stopped (an adapter that lost
// its connection's lease) must still be given back, or the next holder
// would take the claim for a copy in flight and drop the message.
func (in *Ingress) unclaim(ctx context.Context, key string, taken bool) {
	if in.claims == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unclaimTimeout)
	defer cancel()
	switch {
	case taken:
		in.claims.Taken(ctx, key)
	default:
		in.claims.Drop(ctx, key)
	}
}

type logState int

const (
	stateNew logState = iota
	stateUnanswered
	stateAnswered
)

// logState looks for message id in the recent log of chatKey.
func (in *Ingress) logState(ctx context.Context, chatKey, id string) (logState, error) {
	entries, err := in.store.Recent(ctx, chatKey, historyCheck)
	if err != nil {
		return stateNew, fmt.Errorf("checking for a re-delivered message: %w", err)
	}
	state := stateNew
	for _, e := range entries {
		switch {
		case e.Role == chat.RoleUser && e.MessageID == id:
			state = stateUnanswered
		case state == stateUnanswered && e.Role == chat.RoleAssistant && e.Meta["replyTo"] == id:
			return stateAnswered, nil
		case state == stateUnanswered && e.Role == chat.RoleSystem && e.MessageID == id:
			// Refused (queue full) or otherwise settled: do not run it now.
			return stateAnswered, nil
		}
	}
	return state, nil
}

// RecordOnce is Record for platform messages that may be delivered more than
// once: a message already in the chat's log is not logged again.
func (in *Ingress) RecordOnce(ctx context.Context, s Submission) error {
	if s.Message.MessageID == "" {
		return in.Record(ctx, s)
	}
	// Logged once, answered or not, it is a duplicate.
	return in.once(ctx, s.ChatKey, s.Message.MessageID, stateUnanswered, func(logState) error {
		return in.Record(ctx, s)
	})
}
