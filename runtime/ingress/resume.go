package ingress

import (
	"context"
	"fmt"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/journal"
	"github.com/shipmyagent/ship/runtime/queue"
)

// submit is enqueue in cluster mode: the message is logged, then queued
// in the shared stream, which is what makes it durable; it runs on the
// replica that owns its chat.
func (in *Ingress) submit(ctx context.Context, s Submission, logUser bool) (Ticket, error) {
	if logUser {
		e, err := userEntry(s)
		if err != nil {
			return Ticket{}, err
		}
		if _, err := in.store.Append(ctx, e); err != nil {
			return Ticket{}, fmt.Errorf("recording message: %w", err)
		}
	}
	tn := s.turn()
	t, err := in.shared.Submit(ctx, journal.Item{Turn: tn}, s.OnDone)
	if err != nil {
		in.logRefusal(ctx, tn.Route, err)
		in.notifyRefused(ctx, s, err)
		return Ticket{}, fmt.Errorf("queueing message: %w", err)
	}
	if in.observe != nil && logUser {
		in.observe(ctx, s)
	}
	return Ticket{Ticket: t}, nil
}

// Run queues, on this replica, an item the shared queue handed it
// (cluster mode): its log entry and durability are the submitter's.
func (in *Ingress) Run(it journal.Item, onDone func(Outcome)) error {
	in.Remember(it.ChatKey, it.Route.MessageID)
	if err := in.enqueueItem(it, onDone); err != nil {
		return fmt.Errorf("queueing a shared item: %w", err)
	}
	return nil
}

// enqueueItem queues a journaled item on this process's queue.
func (in *Ingress) enqueueItem(it journal.Item, onDone func(Outcome)) error {
	_, err := in.queue.Enqueue(queue.Item[Job]{ID: it.ID, ChatKey: it.ChatKey, Value: Job{
		Turn: it.Turn, Journaled: true, Streamed: it.Streamed, OnDone: onDone,
	}})
	return err
}

// Remember marks a platform message as taken, so a re-delivery of it is a
// duplicate. Recovery remembers every message the journal held, whether it
// runs again or not.
func (in *Ingress) Remember(chatKey, messageID string) {
	if messageID != "" {
		in.seen.Add(seenKey(chatKey, messageID), struct{}{})
	}
}

// Resume queues a message the journal held at start-up: accepted before a
// crash, never finished. Its log entry is restored if the crash lost it.
func (in *Ingress) Resume(ctx context.Context, it journal.Item) error {
	in.Remember(it.ChatKey, it.Route.MessageID)
	if err := in.restoreUserEntry(ctx, it); err != nil {
		in.log.Error().Err(err).Str("chatKey", it.ChatKey).Msg("recovery: restoring the message in the chat log")
	}
	if err := in.enqueueItem(it, nil); err != nil {
		return fmt.Errorf("queueing an interrupted message: %w", err)
	}
	return nil
}

// restoreUserEntry appends the message to its chat log when the crash lost
// it (the journal, not the log, made it durable).
func (in *Ingress) restoreUserEntry(ctx context.Context, it journal.Item) error {
	if it.Route.MessageID != "" {
		recent, err := in.store.Recent(ctx, it.ChatKey, historyCheck)
		if err != nil {
			return err
		}
		for _, en := range recent {
			if en.Role == chat.RoleUser && en.MessageID == it.Route.MessageID {
				return nil
			}
		}
	}
	r := it.Route
	_, err := in.store.Append(ctx, chat.ChatLogEntryV1{
		Channel: r.Channel, ChatID: r.ChatID, ChatKey: it.ChatKey, UserID: r.UserID,
		MessageID: r.MessageID, Role: chat.RoleUser, Text: it.Text, Meta: withMediaMeta(map[string]any{"restored": true}, it.Files, false),
	})
	return err
}
