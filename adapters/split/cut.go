package split

import (
	"unicode"
	"unicode/utf8"
)

// expand replaces every line too long for a part by its pieces.
func (s *splitter) expand() {
	over := false
	for i := range s.lines {
		if s.overlong(&s.lines[i]) {
			over = true
			break
		}
	}
	if !over {
		return
	}
	out := make([]line, 0, len(s.lines)+16)
	cutAfter := false
	for _, ln := range s.lines {
		ln.soft = ln.soft || cutAfter
		if s.overlong(&ln) {
			out, cutAfter = s.cutLine(out, ln, s.budget(&ln))
		} else {
			out, cutAfter = append(out, ln), false
		}
	}
	s.lines = out
}

// budget is the most runes ln may have to fit in a part on its own, fence
// lines included.
func (s *splitter) budget(ln *line) int {
	if ln.kind == kindCode {
		return s.blocks[ln.block].budget
	}
	return s.limit
}

func (s *splitter) overlong(ln *line) bool {
	return !ln.blank && ln.runes > s.budget(ln)
}

// cutLine appends to dst the pieces of ln, a line longer than budget runes.
// Each piece has at most budget runes and is not blank. Pieces are cut at
// white space (which is dropped) if that keeps a piece over half full, else
// between two code points, avoiding a cut before a combining mark, variation
// selector, emoji modifier or tag, or on either side of a zero width joiner.
// No cut leaves a short piece that would read as a fence line.
//
// cutLine reports whether it dropped white space at the end of the line,
// in which case a cut must follow the last piece.
func (s *splitter) cutLine(dst []line, ln line, budget int) ([]line, bool) {
	body := s.text[ln.start:ln.end]
	pos, left := 0, ln.runes
	soft := ln.soft
	for left > 0 {
		if left <= budget && s.fenceLike(body[pos:], left) {
			// Only when no cut avoids it: take the last piece apart
			// after two fence characters, so that no piece reads as a
			// fence line.
			i := leadingSpaces(body[pos:]) + 2
			dst = append(dst, s.piece(ln, pos, pos+i, i, soft))
			pos, left, soft = pos+i, left-i, true
			continue
		}
		if left <= budget {
			if !isBlank(body[pos:]) {
				dst = append(dst, s.piece(ln, pos, len(body), left, soft))
			}
			break
		}
		offs := s.window(body, pos, budget)
		if isBlank(body[pos:offs[budget]]) {
			// White space alone longer than a part is dropped, and the cut
			// goes where it was.
			next, k := s.resume(body, pos, left, budget)
			pos, left, soft = next, left-k, true
			continue
		}
		c, r := s.chooseCut(body, offs, pos, left, budget)
		piece, trimmed := trimRightSpace(body[pos:c])
		dst = append(dst, s.piece(ln, pos, pos+len(piece), r-trimmed, soft))
		next, k := s.resume(body, c, left-r, budget)
		pos, left, soft = next, left-r-k, true
	}
	return dst, pos == len(body)
}

func (s *splitter) piece(ln line, from, to, runes int, soft bool) line {
	return line{
		start: ln.start + from, end: ln.start + to, runes: runes,
		block: ln.block, kind: ln.kind, soft: soft,
	}
}

// window returns the byte offsets in body of the next budget+1 rune
// boundaries from pos: offs[r] is where a piece of r runes would end.
func (s *splitter) window(body string, pos, budget int) []int {
	offs := s.offs[:0]
	for r := 0; r <= budget; r++ {
		offs = append(offs, pos)
		if pos < len(body) {
			if body[pos] < utf8.RuneSelf {
				pos++
			} else {
				_, w := utf8.DecodeRuneInString(body[pos:])
				pos += w
			}
		}
	}
	s.offs = offs
	return offs
}

// chooseCut picks where to cut body for the piece starting at pos, given
// that left runes remain from pos. It returns the byte offset of the cut and
// the runes before it.
func (s *splitter) chooseCut(body string, offs []int, pos, left, budget int) (int, int) {
	half := budget / 2
	for r := budget; r > half; r-- { // at white space
		c := offs[r]
		if spaceAt(body, c) && !spaceBefore(body, c) && s.validCut(body, pos, c, r, left, budget) {
			return c, r
		}
	}
	for r := budget; r > half; r-- { // between code points that do not hold together
		c := offs[r]
		if !spaceAt(body, c) && !spaceBefore(body, c) && breakable(body, c) && s.validCut(body, pos, c, r, left, budget) {
			return c, r
		}
	}
	for r := budget; r > 0; r-- { // anywhere (a cut inside white space is one at its start)
		if c := offs[r]; !spaceBefore(body, c) && s.validCut(body, pos, c, r, left, budget) {
			return c, r
		}
	}
	return offs[budget], budget
}

// validCut reports whether cutting body at c (r runes after pos) leaves a
// non-blank piece, and neither it nor a last piece after it that would read
// as a fence line.
func (s *splitter) validCut(body string, pos, c, r, left, budget int) bool {
	piece, trimmed := trimRightSpace(body[pos:c])
	if piece == "" || s.fenceLike(piece, r-trimmed) {
		return false
	}
	next, k := s.resume(body, c, left-r, budget)
	rest := left - r - k
	return rest == 0 || rest > budget || !s.fenceLike(body[next:], rest)
}

// resume returns where the piece after a cut at i starts (left runes remain
// from i), and how many runes of white space it skips to get there. If
// skipping all the white space would leave a last piece that reads as a
// fence line, it keeps four of them, indenting that piece.
func (s *splitter) resume(body string, i, left, budget int) (int, int) {
	next, k := skipSpace(body, i)
	if rest := left - k; k >= 4 && rest > 0 && rest <= budget-4 && s.fenceLike(body[next:], rest) {
		for range 4 {
			_, w := utf8.DecodeLastRuneInString(body[:next])
			next, k = next-w, k-1
		}
	}
	return next, k
}

// skipSpace returns the offset of the first non-space rune at or after i,
// and how many runes it skipped.
func skipSpace(v string, i int) (int, int) {
	k := 0
	for i < len(v) {
		r, w := utf8.DecodeRuneInString(v[i:])
		if !unicode.IsSpace(r) {
			break
		}
		i += w
		k++
	}
	return i, k
}

// trimRightSpace drops trailing white space and returns how many runes it dropped.
func trimRightSpace(v string) (string, int) {
	k := 0
	for len(v) > 0 {
		r, w := utf8.DecodeLastRuneInString(v)
		if !unicode.IsSpace(r) {
			break
		}
		v = v[:len(v)-w]
		k++
	}
	return v, k
}

func spaceAt(v string, i int) bool {
	r, _ := utf8.DecodeRuneInString(v[i:])
	return i < len(v) && unicode.IsSpace(r)
}

func spaceBefore(v string, i int) bool {
	r, _ := utf8.DecodeLastRuneInString(v[:i])
	return i > 0 && unicode.IsSpace(r)
}

const zwj = '\u200d'

// breakable reports whether a cut at i keeps together what renders as one
// character: it is not before a rune that attaches to the one before it, nor
// right after a zero width joiner.
func breakable(v string, i int) bool {
	r, _ := utf8.DecodeRuneInString(v[i:])
	p, _ := utf8.DecodeLastRuneInString(v[:i])
	return !attaches(r) && p != zwj
}

// attaches reports whether r joins the character before it: combining marks,
// the zero width joiner, variation selectors, emoji skin tone modifiers and
// tag characters.
func attaches(r rune) bool {
	switch {
	case r == zwj,
		r >= 0xFE00 && r <= 0xFE0F,
		r >= 0x1F3FB && r <= 0x1F3FF,
		r >= 0xE0020 && r <= 0xE007F,
		r >= 0xE0100 && r <= 0xE01EF:
		return true
	}
	return r >= 0x300 && unicode.Is(unicode.M, r)
}
