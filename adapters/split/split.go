// Package split cuts a long chat reply into parts that a chat platform
// accepts (Telegram: 4096 code points per message), without cutting lines
// that fit and without breaking Markdown code fences.
package split

import (
	"strings"
	"unicode/utf8"
)

// MinLimit is the smallest limit Split works with; smaller limits are raised
// to it, since a part must hold two fence lines and some content.
const MinLimit = 32

// Split cuts text into parts of at most limit Unicode code points each
// (limit counts runes, not bytes). A limit below MinLimit is raised to
// MinLimit. Empty or white-space-only text gives no parts (nil); text of at
// most limit runes gives one part, text itself, byte for byte.
//
// Longer text is cut between lines: at a paragraph boundary (before a blank
// line, or at the edge of a fenced block) if that leaves the part at least
// half full, else at the last line boundary that fits. A line is cut only
// when it does not fit in a part on its own (inside a fenced block: together
// with the fence lines); then at white space, which is dropped, if that
// keeps the piece over half full, else between two code points, never inside
// a UTF-8 sequence and, where it can, not before a combining mark, variation
// selector, emoji modifier or tag, nor on either side of a zero width joiner.
//
// Fenced code blocks follow CommonMark: a fence line is indented by at most
// three spaces and starts with at least three backticks or tildes; an
// opening fence may carry an info string (no backtick in it after
// backticks); a closing fence has at least as many of the same character
// and nothing else but spaces and tabs; a block left open runs to the end of
// the text. A line longer than limit/4-2 runes (not counting a final "\r")
// is never taken for a fence line, so that fence lines leave room for
// content. A block that fits in one part is not cut: the part ends before
// it instead. A part that starts inside a block begins with a copy of the
// block's opening fence (marker and info string, e.g. "```go"), and a part
// that ends inside one, unless it is the last part, ends with a closing
// fence (the author's own line, or the opening marker if the block is never
// closed); these added lines count towards the limit. So every part but the
// last has balanced fences, and the last is open only if the text ends
// inside a block. No part but the last ends with an opening fence.
//
// When text is cut, Split guarantees:
//
//   - every part has at most limit runes and a character that is not white
//     space, and neither starts nor ends with a blank line;
//   - with the added fence lines taken off, the parts are substrings
//     c1, ..., cN of text, in order, and
//     text == g0 + c1 + g1 + c2 + ... + cN + gN
//     where every gap g is white space only (unicode.IsSpace): nothing but
//     white space at the cuts and at the two ends is ever dropped;
//   - a gap between two parts holds a line break (the line break, the blank
//     lines next to it, and a "\r" before it), unless it lies inside one line
//     that does not fit in a part (then it is the white space at the cut,
//     possibly none).
//
// Joining the parts, added fence lines taken off, with "\n" thus gives back
// the text but for runs of blank lines at cuts (one "\n" remains), "\r"
// before a cut, and the white space at cuts inside over-long lines (a "\n"
// replaces it). Split is deterministic, and its time is linear in the length
// of text.
func Split(text string, limit int) []string {
	limit = max(limit, MinLimit)
	if isBlank(text) {
		return nil
	}
	if utf8.RuneCountInString(text) <= limit {
		return []string{text}
	}
	s := &splitter{text: text, limit: limit, maxFence: limit/4 - 2}
	s.lines = make([]line, 0, strings.Count(text, "\n")+1)
	s.scan()
	s.expand()
	return s.run()
}

// splitter holds the state of one Split call.
type splitter struct {
	text     string
	limit    int
	maxFence int // longest fence line, in runes
	lines    []line
	blocks   []block
	offs     []int // scratch for cutLine
	lastText int   // index of the last line that is not blank
}

// run packs the lines into parts.
func (s *splitter) run() []string {
	n := len(s.lines)
	s.lastText = n - 1
	for s.lastText >= 0 && s.lines[s.lastText].blank {
		s.lastText--
	}
	var parts []string
	for i := 0; ; {
		for i < n && s.lines[i].blank {
			i++
		}
		if i == n {
			return parts
		}
		last := s.pack(i)
		parts = append(parts, s.emit(i, last))
		i = last + 1
	}
}

// pack returns the index of the last line of the part that starts at line
// i, which is not blank.
func (s *splitter) pack(i int) int {
	lines := s.lines
	cost := s.prefixCost(i)
	lastLine, prevLine := -1, -1 // the last two lines a part may end with
	lastPara, paraCost := -1, 0  // the last paragraph boundary, and the part's size there
	beforeOpen, openAt := -1, -1 // the last opening fence in the part, and lastLine before it
	for j := i; j < len(lines); j++ {
		l := &lines[j]
		if j > i {
			if l.soft {
				return max(lastLine, i)
			}
			if cost+1+l.runes+s.closeCost(j) > s.limit {
				return s.overflow(i, j, lastLine, prevLine, lastPara, paraCost, beforeOpen, openAt)
			}
			cost++
		}
		cost += l.runes
		if l.kind == kindOpen && j > i {
			beforeOpen, openAt = lastLine, j
		}
		if l.blank || l.kind == kindOpen {
			continue
		}
		prevLine, lastLine = lastLine, j
		if s.paraAfter(j) {
			lastPara, paraCost = j, cost
		}
	}
	return s.lastText
}

// overflow chooses where to end the part that starts at line i when line k
// does not fit in it any more. The other arguments are as in pack.
func (s *splitter) overflow(i, k, lastLine, prevLine, lastPara, paraCost, beforeOpen, openAt int) int {
	lines := s.lines
	lk := &lines[k]
	inBlock := lk.kind == kindCode || lk.kind == kindClose
	if openAt >= 0 && beforeOpen >= 0 && inBlock && lk.block == lines[openAt].block && s.blocks[lk.block].fits {
		return beforeOpen // move the whole block to the next part
	}
	if lastPara >= 0 && paraCost >= s.limit/2 {
		return lastPara
	}
	if lastLine < 0 {
		// Only an opening fence (and blank lines) fit: end the part with it,
		// and the added close.
		return i
	}
	if prevLine >= 0 && s.beforeClose(lastLine) && lines[prevLine].kind == kindCode &&
		lines[prevLine].block == lines[lastLine].block {
		// Do not leave the closing fence alone at the top of the next part.
		return prevLine
	}
	return lastLine
}

// paraAfter reports whether a cut after line j is a paragraph boundary: a
// blank line or the edge of a fenced block follows.
func (s *splitter) paraAfter(j int) bool {
	l := &s.lines[j]
	if l.kind == kindClose {
		return true
	}
	if l.kind != kindText || j+1 >= len(s.lines) {
		return false
	}
	next := &s.lines[j+1]
	return next.kind == kindOpen || (next.kind == kindText && next.blank)
}

// beforeClose reports whether line j is inside a block and only blank lines
// stand between it and the block's closing fence.
func (s *splitter) beforeClose(j int) bool {
	if s.lines[j].kind != kindCode {
		return false
	}
	for j++; j < len(s.lines); j++ {
		if l := &s.lines[j]; !l.blank {
			return l.kind == kindClose
		}
	}
	return false
}

// prefixCost is the runes of the fence line a part starting at line i begins with.
func (s *splitter) prefixCost(i int) int {
	if l := &s.lines[i]; l.kind == kindCode || l.kind == kindClose {
		return s.blocks[l.block].reopenRunes + 1
	}
	return 0
}

// closeCost is the runes of the fence line a part ending at line j ends with.
func (s *splitter) closeCost(j int) int {
	if l := &s.lines[j]; l.kind == kindCode || l.kind == kindOpen {
		return s.blocks[l.block].closeRunes + 1
	}
	return 0
}

// emit builds the part made of lines a to b, adding fence lines as needed.
func (s *splitter) emit(a, b int) string {
	la, lb := &s.lines[a], &s.lines[b]
	core := s.text[la.start:lb.end]
	if strings.HasSuffix(core, "\r") && !strings.HasSuffix(core, "\r\r") {
		// The "\r" of a "\r\n" cut. (Of "\r\r\n" it would change the
		// line's reading as a fence.)
		core = core[:len(core)-1]
	}
	var reopen, closing string
	if la.kind == kindCode || la.kind == kindClose {
		reopen = s.blocks[la.block].reopen
	}
	if (lb.kind == kindCode || lb.kind == kindOpen) && b < s.lastText {
		closing = s.blocks[lb.block].close
	}
	if reopen == "" && closing == "" {
		return core
	}
	var sb strings.Builder
	sb.Grow(len(reopen) + len(core) + len(closing) + 2)
	if reopen != "" {
		sb.WriteString(reopen)
		sb.WriteByte('\n')
	}
	sb.WriteString(core)
	if closing != "" {
		sb.WriteByte('\n')
		sb.WriteString(closing)
	}
	return sb.String()
}
