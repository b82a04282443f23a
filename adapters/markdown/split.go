package markdown

import (
	"sort"
	"unicode"
)

// MaxTelegramText is Telegram's limit on a message's text after entities
// are applied (https://core.telegram.org/bots/api#sendmessage: "1-4096
// characters after entities parsing"). Counting UTF-16 code units, as
// Split does, never gives more characters than that.
const MaxTelegramText = 4096

// minSplitLimit keeps parts from being absurdly small.
const minSplitLimit = 16

// Part is one message of a split reply.
type Part struct {
	Text     string
	Entities []Entity
}

// Split cuts formatted text (as Telegram returns it) into parts of at most
// limit UTF-16 code units (raised to 16 if smaller), so that each can be
// sent as one message. It cuts at a paragraph boundary outside code blocks
// if that leaves the part at least half full, else at a line boundary
// outside code blocks, else at any line boundary, else at white space, else
// between two characters (never inside a surrogate pair, and where it can
// not inside a combined emoji or before a combining mark). White space at
// the cuts is dropped.
//
// Every entity that spans a cut is cut with it: each part keeps its share,
// with the same type, URL and language, so a pre block cut in two is a pre
// block in both parts and each part's entities are valid on their own
// (see Check). Text that fits in one part gives one part, unchanged;
// white-space-only text gives none.
func Split(text string, ents []Entity, limit int) []Part {
	limit = max(limit, minSplitLimit)
	runes := []rune(text)
	units := make([]int, len(runes)+1) // units[i]: UTF-16 offset of rune i
	for i, c := range runes {
		units[i+1] = units[i] + utf16Rune(c)
	}
	inCode := make([]bool, len(runes)+1) // a cut before rune i falls inside code
	for _, e := range ents {
		if e.Type != Pre && e.Type != Code {
			continue
		}
		a, b := runeAt(units, e.Offset), runeAt(units, e.Offset+e.Length)
		for i := a + 1; i < b; i++ {
			inCode[i] = true
		}
	}
	var parts []Part
	s := 0
	for {
		for s < len(runes) && unicode.IsSpace(runes[s]) {
			s++
		}
		if s == len(runes) {
			return parts
		}
		c := len(runes)
		if units[c]-units[s] > limit {
			c = cut(runes, units, inCode, s, limit)
		}
		e := c
		for e > s && unicode.IsSpace(runes[e-1]) {
			e--
		}
		parts = append(parts, part(runes, units, ents, s, e))
		s = c
	}
}

// runeAt is the index of the rune that starts at UTF-16 offset u.
func runeAt(units []int, u int) int { return sort.SearchInts(units, u) }

// cut picks where the part starting at rune s ends (an index in (s, len)).
func cut(runes []rune, units []int, inCode []bool, s, limit int) int {
	hi := s
	for hi+1 <= len(runes) && units[hi+1]-units[s] <= limit {
		hi++
	}
	half := s + (hi-s)/2
	para, line, codeLine, anyLine, space := -1, -1, -1, -1, -1
	for i := hi; i > s; i-- {
		switch {
		case runes[i-1] == '\n':
			if anyLine < 0 {
				anyLine = i
			}
			if i < half {
				continue
			}
			switch {
			case inCode[i]:
				if codeLine < 0 {
					codeLine = i
				}
			case i >= 2 && runes[i-2] == '\n' && para < 0:
				para = i
			case line < 0:
				line = i
			}
		case unicode.IsSpace(runes[i-1]) && space < 0 && i >= half:
			space = i
		}
	}
	for _, c := range []int{para, line, codeLine, anyLine, space} {
		if c > s {
			return c
		}
	}
	return graphemeCut(runes, s, hi)
}

// graphemeCut steps back from hi a few runes so as not to separate a
// character from the marks, selectors or joiners that complete it.
func graphemeCut(runes []rune, s, hi int) int {
	for i := hi; i > s && i > hi-8; i-- {
		if !joins(runes[i]) && !(runes[i-1] == 0x200D) {
			return i
		}
	}
	return hi
}

// joins reports whether c attaches to the character before it.
func joins(c rune) bool {
	return unicode.Is(unicode.Mn, c) || unicode.Is(unicode.Me, c) || unicode.Is(unicode.Mc, c) ||
		c == 0x200D || (c >= 0xFE00 && c <= 0xFE0F) || (c >= 0x1F3FB && c <= 0x1F3FF) ||
		(c >= 0xE0020 && c <= 0xE007F)
}

// part is runes[a:b] with the entities clipped to it and shifted.
func part(runes []rune, units []int, ents []Entity, a, b int) Part {
	p := Part{Text: string(runes[a:b])}
	ua, ub := units[a], units[b]
	for _, e := range ents {
		x, y := max(e.Offset, ua), min(e.Offset+e.Length, ub)
		if y <= x || isBlank(string(runes[runeAt(units, x):runeAt(units, y)])) {
			continue
		}
		e.Offset, e.Length = x-ua, y-x
		p.Entities = append(p.Entities, e)
	}
	return p
}
