package metrics

import (
	"sync"
	"unicode/utf8"
)

// maxValues is how many distinct values one label admits. The label sets
// are bounded by design (see the package comment); this is the guard for
// a mistake or a hostile peer (a platform answering with ever new error
// codes): past it, values are counted as "other" and the series stay few.
const maxValues = 64

// maxValueLen bounds one label value; longer ones are "other".
const maxValueLen = 128

// other is the value a label takes once it admits no new ones.
const other = "other"

// bounded admits label values up to a number of distinct ones per label.
type bounded struct {
	limit int
	mu    sync.Mutex
	seen  map[string]map[string]struct{} // label → values admitted
}

func newBounded(limit int) *bounded {
	return &bounded{limit: limit, seen: map[string]map[string]struct{}{}}
}

// admit returns v if label has admitted it before or has room for it,
// else "other". Invalid UTF-8 and over-long values are "other" too: the
// client library refuses the first, and neither is a name of ours.
func (b *bounded) admit(label, v string) string {
	if v == "" {
		return "none"
	}
	if len(v) > maxValueLen || !utf8.ValidString(v) {
		return other
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	vals := b.seen[label]
	if _, ok := vals[v]; ok {
		return v
	}
	if len(vals) >= b.limit {
		return other
	}
	if vals == nil {
		vals = map[string]struct{}{}
		b.seen[label] = vals
	}
	vals[v] = struct{}{}
	return v
}
