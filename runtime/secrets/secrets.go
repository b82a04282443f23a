// Package secrets hides known secret values (API keys, platform tokens)
// in text bound for the model, a log line or an error: exec_shell's output
// and environment, an MCP server's errors, the chat log's tool entries.
package secrets

import (
	"bytes"
	"slices"
	"strings"
)

// MinLen is the shortest value treated as a secret: shorter ones would be
// found all over ordinary text, and are too short to be credentials.
const MinLen = 6

// Mark replaces every secret found.
const Mark = "<redacted>"

// Set is a set of secret values. The zero value hides nothing; it is
// immutable once built and safe for concurrent use.
type Set struct {
	values  [][]byte
	longest int
}

// New keeps the distinct values of at least MinLen bytes, trimmed of
// surrounding spaces (a value read from a file often ends in a newline).
func New(values []string) *Set {
	s := &Set{}
	seen := map[string]bool{}
	for _, v := range values {
		v = strings.TrimSpace(v)
		if len(v) < MinLen || seen[v] {
			continue
		}
		seen[v] = true
		s.values = append(s.values, []byte(v))
		s.longest = max(s.longest, len(v))
	}
	return s
}

// Lookahead is how many bytes past a cut must be read so that a secret
// that starts before the cut is seen whole.
func (s *Set) Lookahead() int { return max(s.longest-1, 0) }

// In reports whether v contains a secret.
func (s *Set) In(v string) bool {
	for _, sec := range s.values {
		if strings.Contains(v, string(sec)) {
			return true
		}
	}
	return false
}

// Spans returns the byte ranges [start, end) of b covered by secrets,
// sorted and merged, overlapping occurrences included.
func (s *Set) Spans(b []byte) [][2]int {
	var sp [][2]int
	for _, v := range s.values {
		for off := 0; off < len(b); {
			i := bytes.Index(b[off:], v)
			if i < 0 {
				break
			}
			sp = append(sp, [2]int{off + i, off + i + len(v)})
			off += i + 1
		}
	}
	slices.SortFunc(sp, func(a, b [2]int) int { return a[0] - b[0] })
	merged := sp[:0]
	for _, r := range sp {
		if n := len(merged); n > 0 && r[0] <= merged[n-1][1] {
			merged[n-1][1] = max(merged[n-1][1], r[1])
			continue
		}
		merged = append(merged, r)
	}
	return merged
}

// Cut returns b[:end] with every span (from Spans) that ends by end
// replaced by Mark.
func Cut(b []byte, sp [][2]int, end int) string {
	var out strings.Builder
	at := 0
	for _, r := range sp {
		if r[1] > end {
			break
		}
		out.Write(b[at:r[0]])
		out.WriteString(Mark)
		at = r[1]
	}
	out.Write(b[at:end])
	return out.String()
}

// Redact replaces the secrets in v.
func (s *Set) Redact(v string) string {
	b := []byte(v)
	return Cut(b, s.Spans(b), len(b))
}
