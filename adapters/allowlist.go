package adapters

import "sync/atomic"

// Allowlist is the set of chat or user ids a platform serves, from ship.json's
// allowedChatIds / allowedUserIds. An empty list allows everyone.
type Allowlist[T comparable] struct {
	ids map[T]bool // nil: everyone
}

// NewAllowlist returns the allowlist of ids; no ids allows everyone.
func NewAllowlist[T comparable](ids []T) Allowlist[T] {
	if len(ids) == 0 {
		return Allowlist[T]{}
	}
	m := make(map[T]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return Allowlist[T]{ids: m}
}

// Allows reports whether id may be served.
func (l Allowlist[T]) Allows(id T) bool { return l.ids == nil || l.ids[id] }

// LiveAllowlist is an Allowlist that a configuration reload may replace
// while the adapter runs: each check reads the list in force.
type LiveAllowlist[T comparable] struct {
	cur atomic.Pointer[Allowlist[T]]
}

// NewLiveAllowlist returns the live allowlist of ids.
func NewLiveAllowlist[T comparable](ids []T) *LiveAllowlist[T] {
	l := &LiveAllowlist[T]{}
	l.Set(ids)
	return l
}

// Set puts the allowlist of ids in force from the next check on.
func (l *LiveAllowlist[T]) Set(ids []T) {
	a := NewAllowlist(ids)
	l.cur.Store(&a)
}

// Allows reports whether id may be served now.
func (l *LiveAllowlist[T]) Allows(id T) bool { return l.cur.Load().Allows(id) }
