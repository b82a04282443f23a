package adapters

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/chat"
)

// Ingress is the path every platform message takes: it is logged in the
// ChatStore first, then queued for the one runtime.
type Ingress struct {
	Store *chat.Store
	Queue *QueryQueue
	Log   zerolog.Logger

	// Journal, when set, records accepted work durably (see Journal).
	Journal *Journal
	// Limiter, when set, caps how fast one user of a chat is answered
	// (AcceptOnce, i.e. platform messages).
	Limiter *UserLimiter

	seen seenSet // see AcceptOnce
	ids  idGen
}

// idGen names runs uniquely across restarts: the journal outlives a
// process, and a new process must not reuse an earlier one's ids.
type idGen struct {
	once sync.Once
	boot string
	n    atomic.Uint64
}

func (g *idGen) next() string {
	g.once.Do(func() {
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		g.boot = hex.EncodeToString(b)
	})
	return fmt.Sprintf("m-%s-%d", g.boot, g.n.Add(1))
}

// Submission is one message handed to Accept.
type Submission struct {
	// ID names the run (the requestId in logs); "" lets the queue pick one.
	ID      string
	Channel string
	ChatKey string
	Message IncomingChatMessage
	// Meta is kept in the log entry (platform details).
	Meta map[string]any
	// OnDone, when set, is called once with the outcome of the run.
	OnDone func(Outcome)
	// OnStep, when set, sees every step of the run.
	OnStep func(ctx context.Context, ev agent.StepEvent)
	// DeferSync is for channels whose acknowledgement is the answer itself
	// (the HTTP API): the user entry's fsync is left to the reply's, and
	// waited for before OnDone, so a turn costs one fsync instead of two.
	// Platforms that acknowledge on Accept must leave it false.
	DeferSync bool
}

// Accept logs the message as a user entry and queues it. When Accept
// returns, the message is durable (in the pending-work journal, or in the
// ChatStore when there is no journal), so a platform may be acknowledged.
// When the queue refuses it, the refusal is logged next to it and the
// error (ErrQueueFull or ErrQueueStopped) returned for a "busy" reply.
func (in *Ingress) Accept(ctx context.Context, s Submission) (Ticket, error) {
	return in.enqueue(ctx, s, true)
}

// enqueue journals and queues s, first logging it as a user entry when
// logUser (a crash leftover already has its entry).
func (in *Ingress) enqueue(ctx context.Context, s Submission, logUser bool) (Ticket, error) {
	if s.ID == "" {
		s.ID = in.ids.next()
	}
	journaled := in.Journal != nil && !s.DeferSync
	var pending *chat.Pending
	if logUser {
		e, err := userEntry(s.Channel, s.ChatKey, s.Message, s.Meta)
		if err != nil {
			return Ticket{}, err
		}
		if s.DeferSync || journaled {
			_, pending, err = in.Store.AppendDeferred(ctx, e)
		} else {
			_, err = in.Store.Append(ctx, e)
		}
		if err != nil {
			return Ticket{}, fmt.Errorf("recording message: %w", err)
		}
	}
	if journaled {
		// The journal record is what makes the message durable (recovery
		// restores a lost log entry from it): one fsync, not two.
		if pending != nil {
			pending.Release()
			pending = nil
		}
		req := requestOf(s.Channel, s.ChatKey, s.Message)
		if err := in.Journal.Add(JournalItem{ID: s.ID, ChatKey: s.ChatKey, Request: req, Text: s.Message.Text}); err != nil {
			return Ticket{}, fmt.Errorf("recording message: %w", err)
		}
	}
	onDone := s.OnDone
	if pending != nil {
		onDone = func(o Outcome) {
			if err := pending.Wait(); err != nil {
				in.Log.Error().Err(err).Str("chatKey", s.ChatKey).Msg("syncing user message")
				if o.Err == nil {
					o.Err = fmt.Errorf("syncing user message: %w", err)
				}
			}
			if s.OnDone != nil {
				s.OnDone(o)
			}
		}
	}
	item := in.item(s, onDone)
	item.Journaled = journaled
	t, err := in.Queue.Enqueue(item)
	if err != nil {
		if pending != nil {
			_ = pending.Wait() // the refusal below is fsynced anyway
		}
		if journaled {
			_ = in.Journal.Done(s.ID)
		}
		reason := "not answered: " + err.Error()
		if _, lerr := in.Store.Append(ctx, chat.ChatLogEntryV1{
			Channel: s.Channel, ChatID: s.Message.ChatID, ChatKey: s.ChatKey, MessageID: s.Message.MessageID,
			Role: chat.RoleSystem, Text: reason,
		}); lerr != nil {
			in.Log.Error().Err(lerr).Str("chatKey", s.ChatKey).Msg("logging refused message")
		}
		return Ticket{}, fmt.Errorf("queueing message: %w", err)
	}
	return t, nil
}

func (in *Ingress) item(s Submission, onDone func(Outcome)) QueueItem {
	return QueueItem{
		ID:           s.ID,
		ChatKey:      s.ChatKey,
		Request:      requestOf(s.Channel, s.ChatKey, s.Message),
		Instructions: s.Message.Text,
		OnDone:       onDone,
		OnStep:       s.OnStep,
	}
}

// Record logs a message as a user entry without queueing it: unaddressed
// group messages are kept so chat_load_history sees the whole conversation.
func (in *Ingress) Record(ctx context.Context, channel, chatKey string, m IncomingChatMessage, meta map[string]any) error {
	e, err := userEntry(channel, chatKey, m, meta)
	if err != nil {
		return err
	}
	if _, err := in.Store.Append(ctx, e); err != nil {
		return fmt.Errorf("recording message: %w", err)
	}
	return nil
}

func userEntry(channel, chatKey string, m IncomingChatMessage, meta map[string]any) (chat.ChatLogEntryV1, error) {
	if chatKey == "" {
		return chat.ChatLogEntryV1{}, fmt.Errorf("recording message: %w", chat.ErrInvalidChatKey)
	}
	return chat.ChatLogEntryV1{
		Channel:   channel,
		ChatID:    m.ChatID,
		ChatKey:   chatKey,
		UserID:    m.UserID,
		MessageID: m.MessageID,
		Role:      chat.RoleUser,
		Text:      m.Text,
		Meta:      withPlatformMeta(meta, m),
	}, nil
}

func withPlatformMeta(meta map[string]any, m IncomingChatMessage) map[string]any {
	out := make(map[string]any, len(meta)+3)
	for k, v := range meta {
		out[k] = v
	}
	if m.ChatType != "" {
		out["chatType"] = m.ChatType
	}
	if m.MessageThreadID != 0 {
		out["messageThreadId"] = m.MessageThreadID
	}
	if m.ThreadID != "" {
		out["threadId"] = m.ThreadID
	}
	if m.Username != "" {
		out["username"] = m.Username
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func requestOf(channel, chatKey string, m IncomingChatMessage) chat.RequestContext {
	return chat.RequestContext{
		Channel:         channel,
		ChatID:          m.ChatID,
		MessageThreadID: m.MessageThreadID,
		ThreadID:        m.ThreadID,
		ChatKey:         chatKey,
		UserID:          m.UserID,
		ChatType:        m.ChatType,
		Username:        m.Username,
		MessageID:       m.MessageID,
	}
}

// IsBusy reports whether err means the queue cannot take the message now.
func IsBusy(err error) bool {
	return errors.Is(err, ErrQueueFull) || errors.Is(err, ErrQueueStopped)
}
