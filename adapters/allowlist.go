package adapters

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
