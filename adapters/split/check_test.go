package split

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// This file checks Split's guarantees from the outside, with its own reading
// of fences, so that it does not share the code it checks.

var (
	openRE  = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})(.*)$")
	closeRE = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})[ \t]*$")
)

// fences follows the fenced blocks of a text line by line.
type fences struct {
	maxRunes int    // longer lines are not fence lines
	marker   string // the opening marker of the open block, "" when none
}

// isOpen reports whether v would open a block when none is open.
func (f *fences) isOpen(v string) bool {
	v = strings.TrimSuffix(v, "\r")
	if utf8.RuneCountInString(v) > f.maxRunes {
		return false
	}
	m := openRE.FindStringSubmatch(v)
	return m != nil && !(m[1][0] == '`' && strings.Contains(m[2], "`"))
}

// feed reads one line.
func (f *fences) feed(v string) {
	if f.marker == "" {
		if f.isOpen(v) {
			f.marker = openRE.FindStringSubmatch(strings.TrimSuffix(v, "\r"))[1]
		}
		return
	}
	v = strings.TrimSuffix(v, "\r")
	if utf8.RuneCountInString(v) > f.maxRunes {
		return
	}
	if m := closeRE.FindStringSubmatch(v); m != nil && m[1][0] == f.marker[0] && len(m[1]) >= len(f.marker) {
		f.marker = ""
	}
}

// endsOpen reports whether text ends inside a fenced block.
func endsOpen(text string, maxRunes int) bool {
	f := fences{maxRunes: maxRunes}
	for _, l := range strings.Split(text, "\n") {
		f.feed(l)
	}
	return f.marker != ""
}

func isSpaceOnly(v string) bool { return strings.TrimFunc(v, unicode.IsSpace) == "" }

// checkParts fails t if parts is not a valid result of Split(text, limit).
func checkParts(t testing.TB, text string, limit int, parts []string) {
	t.Helper()
	lim := max(limit, MinLimit)
	maxFence := lim/4 - 2
	if isSpaceOnly(text) {
		if parts != nil {
			t.Fatalf("limit %d: blank text gave %q", limit, parts)
		}
		return
	}
	if utf8.RuneCountInString(text) <= lim {
		if len(parts) != 1 || parts[0] != text {
			t.Fatalf("limit %d: short text changed: %q", limit, parts)
		}
		return
	}
	if len(parts) == 0 {
		t.Fatalf("limit %d: no parts", limit)
	}
	valid := utf8.ValidString(text)
	for i, p := range parts {
		if n := utf8.RuneCountInString(p); n > lim {
			t.Fatalf("limit %d: part %d has %d runes: %q", limit, i, n, p)
		}
		if valid && !utf8.ValidString(p) {
			t.Fatalf("limit %d: part %d is not valid UTF-8: %q", limit, i, p)
		}
		if isSpaceOnly(p) {
			t.Fatalf("limit %d: part %d is blank: %q", limit, i, p)
		}
		ls := strings.Split(p, "\n")
		if isSpaceOnly(ls[0]) || isSpaceOnly(ls[len(ls)-1]) {
			t.Fatalf("limit %d: part %d starts or ends with a blank line: %q", limit, i, p)
		}
		f := fences{maxRunes: maxFence}
		for _, l := range ls {
			f.feed(l)
		}
		last := i == len(parts)-1
		if open := f.marker != ""; (!last && open) || (last && open != endsOpen(text, maxFence)) {
			t.Fatalf("limit %d: part %d of %d ends with fence open=%v: %q", limit, i, len(parts), open, p)
		}
	}
	checkContent(t, text, lim, maxFence, parts)
}

// checkContent checks that text is g0 c1 g1 ... cN gN, where the c are the
// parts without the fence lines Split added and the g are white space; that
// a part starts with an added fence line exactly when it starts inside a
// block, and ends with one exactly when it ends inside a block and is not
// the last; and that a gap without a line break lies inside a line too long
// for a part. Parts can be read in more than one way (a fence line may be
// added or the author's), so it searches.
func checkContent(t testing.TB, text string, lim, maxFence int, parts []string) {
	t.Helper()
	c := contentChecker{text: text, lim: lim, parts: parts, f: fences{maxRunes: maxFence}, failed: map[[2]int]bool{}, long: map[int]bool{}}
	// open[i] tells whether line i of text starts inside a block.
	for start := 0; ; {
		c.starts = append(c.starts, start)
		end := strings.IndexByte(text[start:], '\n')
		if end < 0 {
			end = len(text) - start
		}
		c.open = append(c.open, c.f.marker != "")
		c.f.feed(text[start : start+end])
		if start+end == len(text) {
			break
		}
		start += end + 1
	}
	c.open = append(c.open, c.f.marker != "")
	if !c.match(0, 0) {
		t.Fatalf("limit %d: parts %q do not make up text %q", lim, parts, text)
	}
}

type contentChecker struct {
	text   string
	lim    int
	parts  []string
	f      fences
	starts []int  // byte offset of each line
	open   []bool // whether each line starts inside a block, and the end
	failed map[[2]int]bool
	long   map[int]bool // longLine's answers by line
}

// lineOf returns the index of the line holding byte off.
func (c *contentChecker) lineOf(off int) int {
	i, found := slices.BinarySearch(c.starts, off)
	if !found {
		i--
	}
	return i
}

// match reports whether parts[i:] make up text[pos:].
func (c *contentChecker) match(i, pos int) bool {
	if i == len(c.parts) {
		return isSpaceOnly(c.text[pos:])
	}
	if c.failed[[2]int{i, pos}] {
		return false
	}
	p := c.parts[i]
	last := i == len(c.parts)-1
	rest := c.text[pos:]
	ws := len(rest) - len(strings.TrimLeftFunc(rest, unicode.IsSpace))
	newline := false
	for g := 0; g <= ws; g++ {
		start := pos + g
		if g > 0 && rest[g-1] == '\n' {
			newline = true
		}
		if i > 0 && !newline && !c.longLine(start) {
			continue
		}
		core := p
		if c.open[c.lineOf(start)] {
			j := strings.IndexByte(core, '\n')
			if j < 0 || !c.f.isFenceLine(core[:j]) {
				continue
			}
			core = core[j+1:]
		}
		for _, closed := range []bool{false, true} {
			cc := core
			if closed {
				j := strings.LastIndexByte(cc, '\n')
				if j < 0 || !c.f.isFenceLine(cc[j+1:]) {
					continue
				}
				cc = cc[:j]
			}
			if cc == "" || !strings.HasPrefix(c.text[start:], cc) {
				continue
			}
			end := start + len(cc)
			if closed != (!last && c.open[c.lineOf(end-1)+1]) {
				continue
			}
			if c.match(i+1, end) {
				return true
			}
		}
	}
	c.failed[[2]int{i, pos}] = true
	return false
}

// longLine reports whether the line holding byte off is too long for a part
// on its own, so that Split may cut it.
func (c *contentChecker) longLine(off int) bool {
	l := c.lineOf(off)
	if long, ok := c.long[l]; ok {
		return long
	}
	end := len(c.text)
	if l+1 < len(c.starts) {
		end = c.starts[l+1] - 1
	}
	c.long[l] = utf8.RuneCountInString(c.text[c.starts[l]:end]) > c.lim/2
	return c.long[l]
}

// isFenceLine reports whether v opens or closes some block.
func (f *fences) isFenceLine(v string) bool {
	return f.isOpen(v) || (utf8.RuneCountInString(v) <= f.maxRunes && closeRE.MatchString(v))
}
