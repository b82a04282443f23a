package chatlog

import (
	"container/list"
	"sync"

	"github.com/shipmyagent/ship/runtime/chat"
)

// tail is what a Store knows of one chat: its newest entries and totals,
// complete up to stream sequence lastSeq. Guarded by mu, which a reader
// holds while it brings the tail up to date.
type tail struct {
	mu      sync.Mutex
	lastSeq uint64 // stream sequence of the chat's newest message read
	// entries are the newest decodable entries, oldest first: trimmed to
	// max once a quarter more have gathered (see add), so that appending
	// costs O(1) on average and memory stays near max.
	entries []chat.ChatLogEntryV1
	max     int
	dropped bool // entries no longer starts at the chat's first entry
	msgs    int  // messages of the chat up to lastSeq, decodable or not
	bytes   int64
	lastTS  int64 // ts of the newest decodable entry
}

// add records the message at stream sequence seq, data its payload.
func (t *tail) add(seq uint64, data []byte) {
	t.lastSeq = seq
	t.msgs++
	t.bytes += int64(len(data)) + 1 // the newline of the file layout
	e, ok := chat.DecodeEntry(data)
	if !ok {
		return
	}
	t.lastTS = e.TS
	t.entries = append(t.entries, e)
	if len(t.entries) > t.max+t.max/4 {
		t.entries = append(t.entries[:0:0], t.entries[len(t.entries)-t.max:]...)
		t.dropped = true
	}
}

// newest returns copies of the n newest entries (all when the chat has
// fewer), oldest first; false when older ones it would need were dropped.
func (t *tail) newest(n int) ([]chat.ChatLogEntryV1, bool) {
	if n > len(t.entries) && t.dropped {
		return nil, false
	}
	src := t.entries[len(t.entries)-min(n, len(t.entries)):]
	out := make([]chat.ChatLogEntryV1, len(src))
	for i, e := range src {
		out[i] = cloneEntry(e)
	}
	return out, true
}

// all returns copies of every entry when the tail holds the whole chat.
func (t *tail) all() ([]chat.ChatLogEntryV1, bool) {
	if t.dropped {
		return nil, false
	}
	return t.newest(len(t.entries))
}

// cloneEntry copies e deeply enough that a caller changing its Meta cannot
// change the cache: the file store likewise decodes afresh for every read.
func cloneEntry(e chat.ChatLogEntryV1) chat.ChatLogEntryV1 {
	if e.Meta != nil {
		e.Meta = cloneValue(e.Meta).(map[string]any)
	}
	return e
}

// cloneValue deep-copies what encoding/json decodes into an any.
func cloneValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = cloneValue(x)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, x := range v {
			s[i] = cloneValue(x)
		}
		return s
	}
	return v // string, float64, bool, nil: immutable
}

// tailCache holds the tails of the most recently read chats (LRU).
type tailCache struct {
	maxChats, maxEntries int

	mu    sync.Mutex
	byKey map[string]*list.Element // of *cached
	lru   *list.List               // most recently used first
}

type cached struct {
	subject string
	t       *tail
}

func newTailCache(maxChats, maxEntries int) *tailCache {
	return &tailCache{
		maxChats:   maxChats,
		maxEntries: maxEntries,
		byKey:      make(map[string]*list.Element),
		lru:        list.New(),
	}
}

// get returns the tail of subject, a fresh unloaded one if it has none.
// A tail evicted while a reader holds it stays valid for that reader.
func (c *tailCache) get(subject string) *tail {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[subject]; ok {
		c.lru.MoveToFront(el)
		return el.Value.(*cached).t
	}
	t := &tail{max: c.maxEntries}
	c.byKey[subject] = c.lru.PushFront(&cached{subject: subject, t: t})
	for c.lru.Len() > c.maxChats {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.byKey, old.Value.(*cached).subject)
	}
	return t
}

// clear drops every tail.
func (c *tailCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.byKey)
	c.lru.Init()
}
