package chat

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Matcher tests entry texts for a keyword as Search does, ignoring case: a
// text matches when strings.ToLower(text) contains strings.ToLower(keyword).
// Every ChatStore searches with it, so they all find the same entries.
type Matcher struct {
	lower string
	// probe is the longest piece of lower that a matching line must spell
	// out in its raw bytes, ignoring ASCII case (see mayMatch); "" when no
	// piece qualifies and every line has to be decoded.
	probe               string
	slash, dottedI, kay bool
}

// NewMatcher returns the Matcher of keyword.
func NewMatcher(keyword string) *Matcher {
	m := &Matcher{lower: strings.ToLower(keyword)}
	begin := 0
	for i, r := range m.lower {
		if !probeRune(r) {
			if i-begin > len(m.probe) {
				m.probe = m.lower[begin:i]
			}
			begin = i + utf8.RuneLen(r)
		}
	}
	if len(m.lower)-begin > len(m.probe) {
		m.probe = m.lower[begin:]
	}
	m.slash = strings.Contains(m.probe, "/")
	m.dottedI = strings.Contains(m.probe, "i")
	m.kay = strings.Contains(m.probe, "k")
	return m
}

// probeRune reports whether r, met in a lowered keyword, shows up in the raw
// JSON of a matching text as itself, or as ASCII in another case. That holds
// for printable ASCII other than '"' and '\\' (which JSON escapes), and for
// non-ASCII runes without case, since only they lower to themselves
// (TestCaselessRunesLowerOnlyFromThemselves checks this).
func probeRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 0x20 <= r && r <= 0x7E && r != '"' && r != '\\'
	}
	return r != utf8.RuneError && caseless(r)
}

// caseless reports whether r has no other case.
func caseless(r rune) bool {
	return unicode.SimpleFold(r) == r && unicode.ToUpper(r) == r && unicode.ToLower(r) == r
}

// Matches reports whether text contains the keyword, ignoring case.
func (m *Matcher) Matches(text string) bool {
	return strings.Contains(strings.ToLower(text), m.lower)
}

// mayMatch is a pre-filter on the raw line that must never reject a line
// whose text matches. Without the probe in its raw bytes, a line can still
// match if its JSON spells a character as \uXXXX (any writer may), spells
// '/' as "\/", or holds one of the two non-ASCII runes whose lower case is
// ASCII: U+0130 (İ → i) and U+212A (Kelvin sign → k). Those lines are
// decoded; TestLowerCaseToASCII guards the list.
func (m *Matcher) mayMatch(line []byte) bool {
	if m.probe == "" || containsFoldASCII(line, m.probe) {
		return true
	}
	return bytes.Contains(line, []byte(`\u`)) ||
		m.slash && bytes.Contains(line, []byte(`\/`)) ||
		m.dottedI && bytes.Contains(line, []byte("\u0130")) ||
		m.kay && bytes.Contains(line, []byte("\u212A"))
}

// MatchesLine reports whether the text of an entry's JSON line matches,
// decoding as little as it can: most lines are rejected on their raw bytes.
func (m *Matcher) MatchesLine(line []byte) bool {
	if !m.mayMatch(line) {
		return false
	}
	// Decoding only the text first saves about a quarter of the time when
	// the pre-filter cannot help and most lines are decoded.
	var t struct {
		Text string `json:"text"`
	}
	return json.Unmarshal(line, &t) == nil && m.Matches(t.Text)
}

// containsFoldASCII reports whether s contains lower, ignoring ASCII case.
// lower holds no ASCII capitals; its other bytes must match exactly.
func containsFoldASCII(s []byte, lower string) bool {
	n := len(lower)
	if n == 0 {
		return true
	}
	lo := lower[0]
	up := lo
	if 'a' <= lo && lo <= 'z' {
		up = lo - 'a' + 'A'
	}
	// Candidate starts for either case of the first byte, each found once.
	nextLo := indexByteFrom(s, 0, lo)
	nextUp := nextLo
	if up != lo {
		nextUp = indexByteFrom(s, 0, up)
	}
	for {
		p := nextLo
		if p < 0 || (nextUp >= 0 && nextUp < p) {
			p = nextUp
		}
		if p < 0 || p > len(s)-n {
			return false
		}
		if equalFoldASCII(s[p:p+n], lower) {
			return true
		}
		if nextLo == p {
			nextLo = indexByteFrom(s, p+1, lo)
		}
		if nextUp == p {
			nextUp = indexByteFrom(s, p+1, up)
		}
	}
}

func indexByteFrom(s []byte, from int, c byte) int {
	i := bytes.IndexByte(s[from:], c)
	if i < 0 {
		return -1
	}
	return from + i
}

// equalFoldASCII reports whether a equals lower, ignoring ASCII case.
func equalFoldASCII(a []byte, lower string) bool {
	for i := 0; i < len(a); i++ {
		c := a[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
