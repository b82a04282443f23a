package markdown

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Check reports why Telegram would reject or misplace entities on text, or
// nil. It applies the rules of
// https://core.telegram.org/bots/api#messageentity and
// https://core.telegram.org/bots/api#formatting-options that this package
// relies on, so that a renderer bug shows up in tests, not as a message
// Telegram refuses:
//
//   - offsets and lengths count UTF-16 code units, lie within the text and
//     never cut a surrogate pair;
//   - no entity is empty or covers only white space;
//   - entities are sorted by offset;
//   - two entities that share characters nest, one fully inside the other;
//     bold, italic and strikethrough may contain and be part of any entity
//     "except pre and code"; blockquotes "can't be nested"; "all other
//     entities can't contain each other";
//   - a text_link URL is http(s) with a host, or tg:; a pre language has no
//     white space.
func Check(text string, ents []Entity) error {
	if !utf8.ValidString(text) {
		return fmt.Errorf("text is not valid UTF-8")
	}
	units := utf16.Encode([]rune(text))
	for i, e := range ents {
		end := e.Offset + e.Length
		switch {
		case e.Length <= 0:
			return fmt.Errorf("entity %d (%s) has length %d", i, e.Type, e.Length)
		case e.Offset < 0 || end > len(units):
			return fmt.Errorf("entity %d (%s) [%d,%d) is outside the text (%d units)", i, e.Type, e.Offset, end, len(units))
		case i > 0 && ents[i-1].Offset > e.Offset:
			return fmt.Errorf("entity %d (%s) at %d comes after one at %d", i, e.Type, e.Offset, ents[i-1].Offset)
		case cutsPair(units, e.Offset) || cutsPair(units, end):
			return fmt.Errorf("entity %d (%s) [%d,%d) cuts a surrogate pair", i, e.Type, e.Offset, end)
		case strings.TrimFunc(string(utf16.Decode(units[e.Offset:end])), unicode.IsSpace) == "":
			return fmt.Errorf("entity %d (%s) covers only white space", i, e.Type)
		}
		switch e.Type {
		case Bold, Italic, Strikethrough, Code, Blockquote:
		case Pre:
			if strings.ContainsFunc(e.Language, unicode.IsSpace) {
				return fmt.Errorf("entity %d: pre language %q has white space", i, e.Language)
			}
		case TextLink:
			if !linkURL(e.URL) {
				return fmt.Errorf("entity %d: text_link URL %q is not http(s) or tg", i, e.URL)
			}
		default:
			return fmt.Errorf("entity %d: type %q is not one this package writes", i, e.Type)
		}
		for j := range i {
			if err := nests(ents[j], e); err != nil {
				return fmt.Errorf("entities %d and %d: %w", j, i, err)
			}
		}
	}
	return nil
}

// cutsPair reports whether offset i falls between the two halves of a
// surrogate pair.
func cutsPair(units []uint16, i int) bool {
	return i > 0 && i < len(units) && utf16.IsSurrogate(rune(units[i])) && units[i] >= 0xDC00 &&
		units[i-1] >= 0xD800 && units[i-1] < 0xDC00
}

// nests checks two entities, a starting no later than b, against
// Telegram's nesting rules.
func nests(a, b Entity) error {
	aEnd, bEnd := a.Offset+a.Length, b.Offset+b.Length
	if bEnd <= a.Offset || b.Offset >= aEnd {
		return nil // no common characters
	}
	var outer, inner Entity
	switch {
	case b.Offset >= a.Offset && bEnd <= aEnd:
		outer, inner = a, b
	case a.Offset >= b.Offset && aEnd <= bEnd:
		outer, inner = b, a
	default:
		return fmt.Errorf("%s and %s overlap without nesting", a.Type, b.Type)
	}
	style := func(t string) bool { return t == Bold || t == Italic || t == Strikethrough }
	code := func(t string) bool { return t == Code || t == Pre }
	if (style(outer.Type) || style(inner.Type)) && !code(outer.Type) && !code(inner.Type) {
		return nil
	}
	return fmt.Errorf("%s can't contain %s", outer.Type, inner.Type)
}
