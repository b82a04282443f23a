// Package chatlog is the chat log of ship in cluster mode: every chat's
// entries on one JetStream stream shared by the replicas, behind the same
// chat.Log interface and ChatLogEntryV1 JSON as the file store under
// .ship/chats, and an export back to that file layout.
//
// Layout: the stream SHIP_CHATS holds one subject per chat,
// ship.chat.<chat.EscapeChatKey(chatKey)>, each message one entry exactly as
// the file store writes a line (without the newline). File storage, limits
// retention with no age, size or count limit: a chat log is never dropped.
package chatlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/chat"
)

const (
	// StreamName is the JetStream stream that holds every chat.
	StreamName = "SHIP_CHATS"
	// SubjectPrefix starts every chat's subject; the escaped chat key follows.
	SubjectPrefix = "ship.chat."

	defaultCacheChats   = 256
	defaultCacheEntries = 500
	// defaultTimeout bounds a JetStream request whose context has no
	// deadline, as the jetstream package does for its own requests.
	defaultTimeout = 5 * time.Second
	// hotBudget is how long an append or a read keeps trying: long
	// enough for a stream leader election, short enough that a run fails
	// visibly rather than hangs when NATS is gone.
	hotBudget = 10 * time.Second
)

// ErrNoChatLog is returned by Open with MustExist when the stream is missing.
var ErrNoChatLog = errors.New("no ship chat log on this NATS (stream " + StreamName + " not found)")

// Options configures Open.
type Options struct {
	// Replicas is the stream's copy count (1-5); 3 survives the loss of one
	// server. 0 keeps the replicas of an existing stream, or 1 for a new one.
	Replicas int
	// Logger receives the store's debug and warning lines.
	Logger zerolog.Logger
	// MustExist opens the stream as it is, never creating or updating it,
	// and fails with ErrNoChatLog when there is none (for ship export).
	MustExist bool
	// CacheChats is how many chats keep a tail in memory (LRU); 0 means 256.
	CacheChats int
	// CacheEntries is how many of a chat's newest entries its tail holds;
	// 0 means 500.
	CacheEntries int
}

// Store is the chat log on a JetStream stream. Several Stores, in several
// processes, may append to and read the same stream at once: each keeps a
// tail cache per chat that it brings up to date from the stream before
// every read, so an append acknowledged to any of them is seen by the next
// read of all of them.
type Store struct {
	js      jetstream.JetStream
	nc      *nats.Conn
	stream  jetstream.Stream
	log     zerolog.Logger
	getSubj string // the stream leader's message-get API subject
	timeout time.Duration
	now     func() time.Time

	cache *tailCache

	mu     sync.Mutex
	closed bool
}

var _ chat.Log = (*Store)(nil)

// Open creates (or updates to the configuration below) the stream
// SHIP_CHATS and returns a Store over it.
func Open(ctx context.Context, js jetstream.JetStream, opts Options) (*Store, error) {
	if opts.Replicas < 0 || opts.Replicas > 5 {
		return nil, fmt.Errorf("open chat log: replicas %d must be between 1 and 5 (0: keep)", opts.Replicas)
	}
	if opts.CacheChats < 0 || opts.CacheEntries < 0 {
		return nil, errors.New("open chat log: CacheChats and CacheEntries must not be negative")
	}
	stream, err := openStream(ctx, js, opts)
	if err != nil {
		return nil, err
	}
	jo := js.Options()
	timeout := jo.DefaultTimeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	s := &Store{
		js:      js,
		nc:      js.Conn(),
		stream:  stream,
		log:     opts.Logger.With().Str("component", "chatlog").Logger(),
		getSubj: apiPrefix(jo) + "STREAM.MSG.GET." + StreamName,
		timeout: timeout,
		now:     time.Now,
		cache:   newTailCache(orDefault(opts.CacheChats, defaultCacheChats), orDefault(opts.CacheEntries, defaultCacheEntries)),
	}
	return s, nil
}

// openStream finds or sets up the stream as opts asks.
func openStream(ctx context.Context, js jetstream.JetStream, opts Options) (jetstream.Stream, error) {
	existing, err := js.Stream(ctx, StreamName)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		if opts.MustExist {
			return nil, ErrNoChatLog
		}
	case err != nil:
		return nil, fmt.Errorf("open chat log: %w", err)
	case opts.MustExist:
		return existing, nil
	}
	replicas := opts.Replicas
	if replicas == 0 {
		replicas = 1
		if existing != nil {
			replicas = existing.CachedInfo().Config.Replicas
		}
	}
	stream, err := js.CreateOrUpdateStream(ctx, streamConfig(replicas))
	if err != nil {
		return nil, fmt.Errorf("open chat log: stream %s: %w", StreamName, err)
	}
	return stream, nil
}

// streamConfig is SHIP_CHATS as ship wants it.
func streamConfig(replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        StreamName,
		Description: "ship chat log: one subject per chat, entries as ChatLogEntryV1 JSON; never expires",
		Subjects:    []string{SubjectPrefix + ">"},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		// No age, size or count limit: a chat log is never dropped.
		MaxAge:            0,
		MaxBytes:          -1,
		MaxMsgs:           -1,
		MaxMsgsPerSubject: -1,
		Discard:           jetstream.DiscardOld,
		Replicas:          replicas,
		// Any replica's server answers direct gets (tools, `nats stream
		// get`); the Store's own freshness checks ask the leader (read.go).
		AllowDirect: true,
	}
}

// apiPrefix is the JetStream API prefix js sends its requests to.
func apiPrefix(o jetstream.JetStreamOptions) string {
	switch {
	case o.Domain != "":
		return "$JS." + o.Domain + ".API."
	case o.APIPrefix != "":
		return strings.TrimSuffix(o.APIPrefix, ".") + "."
	}
	return jetstream.DefaultAPIPrefix
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// Subject returns the subject chatKey's entries are published on.
func Subject(chatKey string) (string, error) {
	stem, err := chat.EscapeChatKey(chatKey)
	if err != nil {
		return "", err
	}
	return subjectOf(stem)
}

// subjectOf turns an escaped chat key into its subject, checking that it is
// a single subject token (EscapeChatKey keeps only letters, digits, '-',
// '_' and %XX, so this holds; the check guards against that changing).
func subjectOf(stem string) (string, error) {
	for i := 0; i < len(stem); i++ {
		c := stem[i]
		if c <= ' ' || c >= 0x7F || c == '.' || c == '*' || c == '>' {
			return "", fmt.Errorf("%w: escaped key %q is not a NATS subject token", chat.ErrInvalidChatKey, stem)
		}
	}
	return SubjectPrefix + stem, nil
}

// Append publishes e and returns it as written (V 1, a zero TS stamped) once
// JetStream has acknowledged it, that is once it is stored on the stream's
// replicas. Invalid entries (chat.ErrInvalidChatKey, chat.ErrInvalidEntry)
// publish nothing.
func (s *Store) Append(ctx context.Context, e chat.ChatLogEntryV1) (chat.ChatLogEntryV1, error) {
	e, subject, data, err := s.prepare(ctx, e)
	if err != nil {
		return chat.ChatLogEntryV1{}, err
	}
	if err := s.publish(ctx, subject, data); err != nil {
		return chat.ChatLogEntryV1{}, fmt.Errorf("append chat entry: %w", err)
	}
	return e, nil
}

// publish stores data on subject, trying again for up to hotBudget:
// while a stream leader is elected (a server died) a publish finds no
// responder, and under load an acknowledgement can be lost. Every attempt
// is bounded by the default timeout and carries the same message id, so
// the stream stores a retried publish once.
func (s *Store) publish(ctx context.Context, subject string, data []byte) error {
	id := nuid.Next()
	return s.retry(ctx, func(ctx context.Context) error {
		_, err := s.js.Publish(ctx, subject, data, jetstream.WithExpectStream(StreamName), jetstream.WithMsgID(id))
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamMessageExceedsMaximum || apiErr.ErrorCode == jetstream.JSErrCodeBadRequest) {
			return final{err} // refused for what it is: trying again changes nothing
		}
		return err
	})
}

// final marks an error that trying again cannot mend.
type final struct{ error }

func (f final) Unwrap() error { return f.error }

// retry calls fn, each call bounded by the default timeout, until it
// succeeds, fails for good (final, or a connection closed by its owner),
// or hotBudget (and ctx) runs out: while a stream leader is elected nobody
// answers, and under load an answer can be lost.
func (s *Store) retry(ctx context.Context, fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, hotBudget)
	defer cancel()
	wait := 100 * time.Millisecond
	for {
		actx, acancel := s.bounded(ctx)
		err := fn(actx)
		acancel()
		var f final
		switch {
		case err == nil:
			return nil
		case errors.As(err, &f):
			return f.error
		case errors.Is(err, nats.ErrConnectionClosed):
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// AppendDeferred publishes e without waiting for the acknowledgement;
// Pending.Wait waits for it (bounded by the JetStream default timeout).
// Release leaves the acknowledgement unread.
func (s *Store) AppendDeferred(ctx context.Context, e chat.ChatLogEntryV1) (chat.ChatLogEntryV1, *chat.Pending, error) {
	e, subject, data, err := s.prepare(ctx, e)
	if err != nil {
		return chat.ChatLogEntryV1{}, nil, err
	}
	fut, err := s.js.PublishAsync(subject, data, jetstream.WithExpectStream(StreamName))
	if err != nil {
		return chat.ChatLogEntryV1{}, nil, fmt.Errorf("append chat entry: %w", err)
	}
	timeout := s.timeout
	return e, chat.NewPending(func() error {
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case <-fut.Ok():
			return nil
		case err := <-fut.Err():
			return fmt.Errorf("append chat entry: %w", err)
		case <-t.C:
			return fmt.Errorf("append chat entry: no acknowledgement from JetStream within %s", timeout)
		}
	}), nil
}

// prepare validates e, stamps it and encodes it as the file store would.
func (s *Store) prepare(ctx context.Context, e chat.ChatLogEntryV1) (chat.ChatLogEntryV1, string, []byte, error) {
	fail := func(err error) (chat.ChatLogEntryV1, string, []byte, error) {
		return chat.ChatLogEntryV1{}, "", nil, fmt.Errorf("append chat entry: %w", err)
	}
	if err := s.checkOpen(ctx); err != nil {
		return fail(err)
	}
	stem, err := chat.Validate(e)
	if err != nil {
		return fail(err)
	}
	subject, err := subjectOf(stem)
	if err != nil {
		return fail(err)
	}
	e.V = 1
	if e.TS == 0 {
		e.TS = s.now().UnixMilli()
	}
	var buf bytes.Buffer
	if err := chat.EncodeEntry(&buf, e); err != nil {
		return fail(err)
	}
	return e, subject, bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Close marks the store closed: every later call fails with
// chat.ErrStoreClosed. The NATS connection belongs to the caller and stays
// open.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return chat.ErrStoreClosed
	}
	s.closed = true
	s.cache.clear()
	return nil
}

// checkOpen fails once the store is closed or ctx is done.
func (s *Store) checkOpen(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return chat.ErrStoreClosed
	}
	return nil
}
