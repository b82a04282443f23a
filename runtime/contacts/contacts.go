// Package contacts is ship's address book: who is where, learned from every
// message ship logs. A person is known by their platform identity
// ("telegram:123456") and their username; the book keeps where they last
// wrote, and where they last wrote privately, so a message to them can be
// delivered through that chat.
package contacts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/renameio/v2"
	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/records"
)

// Limits of the book: it is an address book, not a user database.
const (
	maxContacts = 10_000
	flushEvery  = 5 * time.Second
)

// ErrNotFound means nobody in the book matches.
var ErrNotFound = errors.New("no such contact")

// ErrAmbiguous means several people match; the caller must say which.
var ErrAmbiguous = errors.New("several contacts match")

// Contact is one person on one platform and where to reach them.
type Contact struct {
	Identity string    `json:"identity"` // "channel:userId"
	Username string    `json:"username,omitempty"`
	Last     Where     `json:"last"`              // the chat they last wrote in
	Private  *Where    `json:"private,omitempty"` // their last private chat with the bot
	Seen     time.Time `json:"seen"`
}

// Where is a chat someone wrote in, and their last message there (QQ only
// lets a bot answer a recent message).
type Where struct {
	Channel         string    `json:"channel"`
	ChatKey         string    `json:"chatKey"`
	ChatID          string    `json:"chatId"`
	ChatType        string    `json:"chatType,omitempty"`
	MessageThreadID int64     `json:"messageThreadId,omitempty"`
	ThreadID        string    `json:"threadId,omitempty"`
	MessageID       string    `json:"messageId,omitempty"`
	At              time.Time `json:"at"`
}

// Route is where a message to this chat goes, as the dispatchers take it.
func (w Where) Route(c Contact) dispatch.RequestContext {
	_, user, _ := strings.Cut(c.Identity, ":")
	return dispatch.RequestContext{
		Channel: w.Channel, ChatID: w.ChatID, ChatKey: w.ChatKey, ChatType: w.ChatType,
		MessageThreadID: w.MessageThreadID, ThreadID: w.ThreadID, MessageID: w.MessageID,
		UserID: user, Username: c.Username,
	}
}

// Best is where a message to c should go: their private chat when there
// is one, else the chat they last wrote in.
func (c Contact) Best() Where {
	if c.Private != nil {
		return *c.Private
	}
	return c.Last
}

// Book is the address book, kept in memory and saved to one JSON file a
// few seconds after it changes (and at Close): losing the last seconds of
// it in a crash costs nothing that the next message does not teach again.
// It is safe for concurrent use. In cluster mode (OpenShared) it is kept
// in a table the replicas share instead of the file.
type Book struct {
	path string
	log  zerolog.Logger
	now  func() time.Time
	// table, when set, is where the book is kept instead of path.
	table records.Table

	mu    sync.Mutex
	byID  map[string]*Contact
	dirty bool
	// learned are the contacts Learn changed since the last Flush (cluster
	// mode: only those are written).
	learned map[string]bool
	// refreshed is when the book was last read from the table.
	refreshed time.Time
}

// Open loads the book at path (a missing file is an empty book).
func Open(path string, log zerolog.Logger) (*Book, error) {
	b := &Book{path: path, log: log, now: time.Now, byID: map[string]*Contact{}}
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return b, nil
	case err != nil:
		return nil, fmt.Errorf("reading contacts: %w", err)
	}
	var list []Contact
	if err := json.Unmarshal(raw, &list); err != nil {
		// A damaged address book must not stop ship: it is relearned.
		log.Error().Err(err).Str("file", path).Msg("contacts file unreadable; starting with an empty book")
		return b, nil
	}
	for i := range list {
		c := list[i]
		b.byID[c.Identity] = &c
	}
	return b, nil
}

// Learn notes where the sender of s is. Messages of channels that cannot
// be written to (the API, the scheduler) teach nothing.
func (b *Book) Learn(_ context.Context, s ingress.Submission) {
	m := s.Message
	if m.UserID == "" || s.Channel == chat.ChannelAPI || s.Channel == chat.ChannelScheduler || s.Turn.Route.Channel != "" {
		return
	}
	w := Where{Channel: s.Channel, ChatKey: s.ChatKey, ChatID: m.ChatID, ChatType: m.ChatType,
		MessageThreadID: m.MessageThreadID, ThreadID: m.ThreadID, MessageID: m.MessageID, At: b.now()}
	id := s.Channel + ":" + m.UserID
	b.mu.Lock()
	defer b.mu.Unlock()
	c, ok := b.byID[id]
	if !ok {
		c = &Contact{Identity: id}
		b.byID[id] = c
		b.evictLocked()
	}
	if m.Username != "" {
		c.Username = m.Username
	}
	c.Last, c.Seen = w, w.At
	if !chat.IsGroup(m.ChatType) {
		p := w
		c.Private = &p
	}
	b.dirty = true
	if b.table != nil {
		b.learned[id] = true
	}
}

// evictLocked drops the longest unseen contact when the book is full.
func (b *Book) evictLocked() {
	if len(b.byID) <= maxContacts {
		return
	}
	var oldest *Contact
	for _, c := range b.byID {
		if oldest == nil || c.Seen.Before(oldest.Seen) {
			oldest = c
		}
	}
	delete(b.byID, oldest.Identity)
	delete(b.learned, oldest.Identity)
}

// Lookup finds people by username (any case, with or without "@") or by
// identity ("telegram:123456"), most recently seen first. In cluster mode
// a miss rereads the shared book first (see OpenShared).
func (b *Book) Lookup(who string) []Contact {
	q := strings.TrimPrefix(strings.TrimSpace(who), "@")
	out := b.lookup(q)
	if len(out) > 0 || b.table == nil {
		return out
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	if err := b.refresh(ctx); err != nil {
		b.log.Warn().Err(err).Msg("reading the shared contacts")
		return nil
	}
	return b.lookup(q)
}

func (b *Book) lookup(q string) []Contact {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Contact
	if c, ok := b.byID[q]; ok {
		return []Contact{*c}
	}
	for _, c := range b.byID {
		if c.Username != "" && strings.EqualFold(c.Username, q) {
			out = append(out, *c)
		}
	}
	slices.SortFunc(out, func(a, b Contact) int { return b.Seen.Compare(a.Seen) })
	return out
}

// Find returns the one person who matches, ErrNotFound or ErrAmbiguous.
func (b *Book) Find(who string) (Contact, error) {
	found := b.Lookup(who)
	switch len(found) {
	case 0:
		return Contact{}, fmt.Errorf("%q: %w", who, ErrNotFound)
	case 1:
		return found[0], nil
	}
	ids := make([]string, len(found))
	for i, c := range found {
		ids[i] = c.Identity
	}
	return Contact{}, fmt.Errorf("%q is %s: %w", who, strings.Join(ids, " and "), ErrAmbiguous)
}

// Run saves the book a few seconds after it changes, until ctx ends, and
// then once more.
func (b *Book) Run(ctx context.Context) {
	if b.table != nil {
		if err := b.refresh(ctx); err != nil {
			b.log.Warn().Err(err).Msg("reading the shared contacts")
		}
	}
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if err := b.Flush(); err != nil {
				b.log.Error().Err(err).Msg("saving contacts")
			}
			return
		case <-t.C:
			if err := b.Flush(); err != nil {
				b.log.Error().Err(err).Msg("saving contacts")
			}
			b.refreshIfStale(ctx)
		}
	}
}

// Flush saves the book if it changed (in cluster mode: writes what this
// replica learned).
func (b *Book) Flush() error {
	if b.table != nil {
		ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
		defer cancel()
		return b.flushShared(ctx)
	}
	b.mu.Lock()
	if !b.dirty {
		b.mu.Unlock()
		return nil
	}
	list := make([]Contact, 0, len(b.byID))
	for _, c := range b.byID {
		list = append(list, *c)
	}
	b.dirty = false
	b.mu.Unlock()
	slices.SortFunc(list, func(a, b Contact) int { return strings.Compare(a.Identity, b.Identity) })
	data, err := json.Marshal(list)
	if err == nil {
		if err = os.MkdirAll(filepath.Dir(b.path), 0o700); err == nil {
			err = renameio.WriteFile(b.path, data, 0o600)
		}
	}
	if err != nil {
		b.mu.Lock()
		b.dirty = true
		b.mu.Unlock()
		return fmt.Errorf("saving contacts: %w", err)
	}
	return nil
}
