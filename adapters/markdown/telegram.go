// Package markdown turns the Markdown that models write (CommonMark with
// GFM tables and strikethrough) into the formatted text of chat platforms.
// It parses with goldmark and walks the syntax tree, so what a reader sees
// follows the Markdown grammar rather than guesses made by regular
// expressions.
package markdown

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
)

// Telegram's entity types used here; see
// https://core.telegram.org/bots/api#messageentity.
const (
	Bold          = "bold"
	Italic        = "italic"
	Strikethrough = "strikethrough"
	Code          = "code"
	Pre           = "pre"
	TextLink      = "text_link"
	Blockquote    = "blockquote"
)

// Entity is one Telegram MessageEntity
// (https://core.telegram.org/bots/api#messageentity). Offset and Length
// count UTF-16 code units, as Telegram does.
type Entity struct {
	Type     string `json:"type"`
	Offset   int    `json:"offset"`
	Length   int    `json:"length"`
	URL      string `json:"url,omitempty"`
	Language string `json:"language,omitempty"`
}

// parser is built per call: goldmark parsers are cheap to build and holding
// one at package level would be shared mutable state.
func parser() goldmark.Markdown {
	return goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough))
}

// Telegram renders md as Telegram text plus the entities that format it, to
// be sent with the "entities" parameter and no parse_mode: no escaping is
// needed then, so no model output can make Telegram reject the message.
//
// Headings become bold lines, lists get "• " or "1. " markers indented by
// nesting, tables become a pre block of aligned columns, links become
// text_link entities (autolinks and bare URLs stay text, which Telegram
// links itself), images show their alt text and URL, and raw HTML is shown
// as written. The entities follow Telegram's rules (see Check). The text
// has no leading or trailing white space, since Telegram trims it.
func Telegram(md string) (string, []Entity) {
	src := []byte(strings.ToValidUTF8(md, "\uFFFD"))
	doc := parser().Parser().Parse(text.NewReader(src))
	r := &renderer{src: src, open: map[string]int{}}
	r.blocks(doc)
	return r.finish()
}

// renderer accumulates the text and entities of one Telegram call.
type renderer struct {
	src    []byte
	out    strings.Builder
	pos    int    // length of out in UTF-16 code units
	indent string // written after every line break inside list items
	ents   []Entity

	// open counts open style spans by type, so a span nested in one of the
	// same type (bold inside a bold heading) adds no entity of its own.
	open map[string]int
	// styles are the open bold/italic/strikethrough spans, innermost last.
	styles []*span
	inLink bool // inside a text_link: no code entities (they can't nest)
	quote  int  // inside a blockquote: only bold/italic/strike may nest
}

// span is an open style entity: it starts at start.
type span struct {
	typ   string
	start int
}

// write appends s, counting UTF-16 code units.
func (r *renderer) write(s string) {
	r.out.WriteString(s)
	r.pos += utf16Len(s)
}

// newline starts a new line at the current list indentation.
func (r *renderer) newline() { r.write("\n" + r.indent) }

// add records an entity over [start, r.pos), unless it would hold only
// white space (Telegram rejects or ignores such entities).
func (r *renderer) add(e Entity, start int) {
	if r.pos <= start || isBlank(r.tail(start)) {
		return
	}
	e.Offset, e.Length = start, r.pos-start
	r.ents = append(r.ents, e)
}

// tail returns the text written since UTF-16 offset start.
func (r *renderer) tail(start int) string {
	s := r.out.String()
	n := r.pos
	i := len(s)
	for i > 0 && n > start {
		c, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
		n -= utf16Rune(c)
	}
	return s[i:]
}

// style renders children as a bold, italic or strikethrough span.
func (r *renderer) style(typ string, n ast.Node) {
	if r.open[typ] > 0 {
		r.inlines(n)
		return
	}
	r.open[typ]++
	sp := &span{typ: typ, start: r.pos}
	r.styles = append(r.styles, sp)
	r.inlines(n)
	r.styles = r.styles[:len(r.styles)-1]
	r.open[typ]--
	r.add(Entity{Type: typ}, sp.start)
}

// code writes s as a code or pre entity. Telegram lets bold, italic and
// strikethrough contain any entity "except pre and code", and "all other
// entities can't contain each other"
// (https://core.telegram.org/bots/api#formatting-options), so open styles
// are closed before and reopened after it; inside a link or a quote the
// code is plain text.
func (r *renderer) code(s string, e Entity) {
	if r.inLink || r.quote > 0 {
		r.write(s)
		return
	}
	for _, sp := range r.styles {
		r.add(Entity{Type: sp.typ}, sp.start)
	}
	start := r.pos
	r.write(s)
	r.add(e, start)
	for _, sp := range r.styles {
		sp.start = r.pos
	}
}

// finish trims white space at both ends (shifting and clipping the
// entities as Telegram would) and sorts the entities by offset, outer
// entities first.
func (r *renderer) finish() (string, []Entity) {
	s := r.out.String()
	trimmed := strings.TrimLeftFunc(s, unicode.IsSpace)
	lead := utf16Len(s[:len(s)-len(trimmed)])
	trimmed = strings.TrimRightFunc(trimmed, unicode.IsSpace)
	end := utf16Len(trimmed)
	var ents []Entity
	for _, e := range r.ents {
		a, b := max(e.Offset-lead, 0), min(e.Offset+e.Length-lead, end)
		if b <= a {
			continue
		}
		e.Offset, e.Length = a, b-a
		ents = append(ents, e)
	}
	slices.SortStableFunc(ents, func(a, b Entity) int {
		if a.Offset != b.Offset {
			return a.Offset - b.Offset
		}
		if a.Length != b.Length {
			return b.Length - a.Length
		}
		return rank(a.Type) - rank(b.Type)
	})
	return trimmed, ents
}

// rank orders entities over the same characters, outer first: a quote
// holds links, links hold styles.
func rank(typ string) int {
	switch typ {
	case Blockquote:
		return 0
	case TextLink:
		return 1
	case Bold:
		return 2
	case Italic:
		return 3
	case Strikethrough:
		return 4
	}
	return 5
}

// isBlank reports whether s holds only white space.
func isBlank(s string) bool { return strings.TrimFunc(s, unicode.IsSpace) == "" }

// utf16Rune is the number of UTF-16 code units of c.
func utf16Rune(c rune) int {
	if c >= 0x10000 {
		return 2
	}
	return 1
}

// utf16Len is the length of s in UTF-16 code units, the unit of Telegram's
// offsets and lengths.
func utf16Len(s string) int {
	n := 0
	for _, c := range s {
		n += utf16Rune(c)
	}
	return n
}
