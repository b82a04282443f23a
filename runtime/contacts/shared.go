package contacts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/records"
)

const (
	// sharedTimeout bounds one reread of the shared book.
	sharedTimeout = 10 * time.Second
	// flushTimeout bounds one flush: short, because the last one runs in
	// shutdown's budget, when the other replicas may be stopping too (and
	// JetStream without a quorum); what a failed flush did not write is
	// written at the next, or relearned.
	flushTimeout = 3 * time.Second
	// refreshEvery is how often Run rereads the whole shared book: a
	// list of up to 10,000 records is too much for every flush tick.
	refreshEvery = 30 * time.Second
)

// OpenShared returns a book kept in t, the cluster's shared table, one
// record per contact (keyed by identity), instead of a file.
//
// Consistency: Learn stays in memory, as alone; every flush (5 s, and at
// shutdown) writes the contacts this replica learned, each merged into the
// shared record with a compare-and-swap, the newest sighting winning field
// by field (where they last wrote, their private chat, their username), so
// two replicas learning the same person at once lose nothing. Lookup and Find
// answer from memory, which is reread from the table every 30 s and on
// any miss: a person learned on another replica is found once that
// replica has flushed (within about 5 s), and a known person's latest
// chat may be up to about 35 s old.
func OpenShared(t records.Table, log zerolog.Logger) *Book {
	return &Book{table: t, log: log, now: time.Now, byID: map[string]*Contact{}, learned: map[string]bool{}}
}

// flushShared writes the contacts learned since the last flush.
func (b *Book) flushShared(ctx context.Context) error {
	b.mu.Lock()
	mine := make([]Contact, 0, len(b.learned))
	for id := range b.learned {
		if c, ok := b.byID[id]; ok {
			mine = append(mine, *c)
		}
	}
	clear(b.learned)
	b.dirty = false
	b.mu.Unlock()

	var errs []error
	for _, c := range mine {
		err := records.Update(ctx, b.table, c.Identity, func(old []byte, exists bool) ([]byte, bool, error) {
			merged := c
			if exists {
				var theirs Contact
				if json.Unmarshal(old, &theirs) == nil {
					merged = merge(theirs, c)
				}
			}
			data, err := json.Marshal(merged)
			return data, false, err
		})
		if err != nil {
			errs = append(errs, err)
			b.mu.Lock()
			b.learned[c.Identity] = true // again at the next flush
			b.dirty = true
			b.mu.Unlock()
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("saving contacts: %w", err)
	}
	return nil
}

// refreshIfStale rereads the shared book when it was last read
// refreshEvery ago (Run's ticks; cluster mode only).
func (b *Book) refreshIfStale(ctx context.Context) {
	if b.table == nil || ctx.Err() != nil {
		return
	}
	b.mu.Lock()
	stale := b.now().Sub(b.refreshed) >= refreshEvery
	b.mu.Unlock()
	if !stale {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, sharedTimeout)
	defer cancel()
	if err := b.refresh(ctx); err != nil {
		b.log.Warn().Err(err).Msg("reading the shared contacts")
	}
}

// refresh rereads the whole shared book into memory, keeping what this
// replica learned and has not written yet, and trims the table to the
// book's limit (the longest unseen go).
func (b *Book) refresh(ctx context.Context) error {
	recs, err := b.table.List(ctx)
	if err != nil {
		return fmt.Errorf("reading contacts: %w", err)
	}
	next := make(map[string]*Contact, len(recs))
	for _, r := range recs {
		var c Contact
		if err := json.Unmarshal(r.Value, &c); err != nil || c.Identity != r.Key {
			b.log.Warn().Str("contact", r.Key).Msg("unreadable shared contact; skipped")
			continue
		}
		next[c.Identity] = &c
	}
	if over := len(recs) - maxContacts; over > 0 {
		slices.SortFunc(recs, func(x, y records.Record) int { return seenOf(x).Compare(seenOf(y)) })
		for _, r := range recs[:over] {
			delete(next, r.Key)
			if err := b.table.Delete(ctx, r.Key, r.Rev); err != nil && !errors.Is(err, records.ErrConflict) {
				return fmt.Errorf("trimming contacts: %w", err)
			}
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for id := range b.learned {
		if mine, ok := b.byID[id]; ok {
			m := *mine
			if theirs, ok := next[id]; ok {
				m = merge(*theirs, m)
			}
			next[id] = &m
		}
	}
	b.byID = next
	for len(b.byID) > maxContacts {
		b.evictLocked()
	}
	b.refreshed = b.now()
	return nil
}

// seenOf is when a listed contact was last seen (zero when unreadable,
// so an unreadable record is trimmed first).
func seenOf(r records.Record) time.Time {
	var c Contact
	_ = json.Unmarshal(r.Value, &c)
	return c.Seen
}

// merge combines two sightings of one person, the newest winning field by
// field.
func merge(a, b Contact) Contact {
	out := a
	if b.Last.At.After(a.Last.At) {
		out.Last = b.Last
	}
	if b.Private != nil && (a.Private == nil || b.Private.At.After(a.Private.At)) {
		p := *b.Private
		out.Private = &p
	}
	if b.Username != "" && (a.Username == "" || b.Seen.After(a.Seen)) {
		out.Username = b.Username
	}
	if b.Seen.After(a.Seen) {
		out.Seen = b.Seen
	}
	return out
}
