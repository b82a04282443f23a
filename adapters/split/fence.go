package split

import (
	"strings"
	"unicode/utf8"
)

// Line kinds.
const (
	kindText  uint8 = iota // outside any fenced block
	kindOpen               // the opening fence line of a block
	kindCode               // a line inside a fenced block
	kindClose              // the closing fence line of a block
)

// line is one line of the text (without its '\n'), or one piece of a line
// that is too long for a part.
type line struct {
	start, end int // byte span in the text
	runes      int // code points in the span
	block      int // index in splitter.blocks, or -1 for kindText
	kind       uint8
	blank      bool // white space only
	soft       bool // a cut is forced before this line (it continues a cut line)
}

// block is a fenced code block.
type block struct {
	reopen      string // opening fence line, trailing blanks removed
	close       string // closing fence line added when a part ends inside the block
	reopenRunes int
	closeRunes  int
	budget      int  // most runes a line of the block may have and still fit between fences
	fits        bool // the whole block, fences included, fits in one part
}

// scan splits the text into lines and finds the fenced blocks.
//
// Fences follow CommonMark: up to three spaces of indentation, then three or
// more backticks or tildes (an info string may follow; after backticks it
// may not contain a backtick); the block ends at a line of the same
// character, at least as many, and nothing else but spaces and tabs, or at
// the end of the text. A line longer than s.maxFence code points (after
// dropping a trailing "\r") is never a fence line, so that the fence lines
// Split adds always leave room for content.
func (s *splitter) scan() {
	text := s.text
	cur := -1 // index of the open block, or -1
	var ch byte
	var n, openRunes, cost int
	for start := 0; ; {
		end := strings.IndexByte(text[start:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += start
		}
		body := text[start:end]
		ln := line{start: start, end: end, runes: utf8.RuneCountInString(body), block: -1, blank: isBlank(body)}
		view := strings.TrimSuffix(body, "\r")
		fenceSized := ln.runes-(len(body)-len(view)) <= s.maxFence
		if cur < 0 {
			if c, m, indent, ok := openingFence(view); ok && fenceSized {
				cur, ch, n = len(s.blocks), c, m
				s.blocks = append(s.blocks, block{
					reopen: strings.TrimRight(view, " \t"),
					close:  view[:indent+m],
				})
				ln.kind, ln.block = kindOpen, cur
				openRunes, cost = ln.runes, ln.runes
			}
		} else {
			ln.block = cur
			cost += 1 + ln.runes
			if fenceSized && closingFence(view, ch, n) {
				ln.kind = kindClose
				s.blocks[cur].close = strings.TrimRight(view, " \t")
				s.finishBlock(cur, openRunes, ln.runes, cost)
				cur = -1
			} else {
				ln.kind = kindCode
			}
		}
		s.lines = append(s.lines, ln)
		if end == len(text) {
			break
		}
		start = end + 1
	}
	if cur >= 0 {
		s.finishBlock(cur, openRunes, 0, cost)
	}
}

// finishBlock works out the sizes of block b once its end is known.
// openRunes and closerRunes are the lengths of its fence lines as written
// (closerRunes is 0 for a block left open), cost the runes of the whole block.
func (s *splitter) finishBlock(b, openRunes, closerRunes, cost int) {
	blk := &s.blocks[b]
	blk.reopenRunes = utf8.RuneCountInString(blk.reopen)
	blk.closeRunes = utf8.RuneCountInString(blk.close)
	// A part holding one line of the block has at most the opening fence as
	// written (or its copy, which is no longer) before it and the added
	// close or the closing line as written after it.
	blk.budget = s.limit - openRunes - 2 - max(blk.closeRunes, closerRunes)
	blk.fits = cost <= s.limit
}

// openingFence reports whether v opens a fenced block, and if so with which
// character, how many of them and after how many spaces.
func openingFence(v string) (ch byte, n, indent int, ok bool) {
	indent = leadingSpaces(v)
	if indent > 3 || indent == len(v) || (v[indent] != '`' && v[indent] != '~') {
		return 0, 0, 0, false
	}
	ch = v[indent]
	m := indent
	for m < len(v) && v[m] == ch {
		m++
	}
	if m-indent < 3 || (ch == '`' && strings.IndexByte(v[m:], '`') >= 0) {
		return 0, 0, 0, false
	}
	return ch, m - indent, indent, true
}

// closingFence reports whether v closes a block opened with n times ch.
func closingFence(v string, ch byte, n int) bool {
	indent := leadingSpaces(v)
	if indent > 3 {
		return false
	}
	m := indent
	for m < len(v) && v[m] == ch {
		m++
	}
	return m-indent >= n && strings.Trim(v[m:], " \t") == ""
}

// looksLikeFence reports whether v, as a line of a part, could open or close
// a fenced block: up to three spaces, then three backticks or tildes.
func looksLikeFence(v string) bool {
	i := leadingSpaces(v)
	if i > 3 || len(v)-i < 3 {
		return false
	}
	c := v[i]
	return (c == '`' || c == '~') && v[i+1] == c && v[i+2] == c
}

// fenceLike reports whether v (of the given rune count) would be taken for
// a fence line if it stood alone on a line of a part.
func (s *splitter) fenceLike(v string, runes int) bool {
	if strings.HasSuffix(v, "\r") {
		v, runes = v[:len(v)-1], runes-1
	}
	return runes <= s.maxFence && looksLikeFence(v)
}

func leadingSpaces(v string) int {
	i := 0
	for i < len(v) && v[i] == ' ' {
		i++
	}
	return i
}

func isBlank(v string) bool { return strings.TrimSpace(v) == "" }
