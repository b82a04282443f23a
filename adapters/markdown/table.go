package markdown

import (
	"strings"
	"unicode"

	east "github.com/yuin/goldmark/extension/ast"
)

// table writes a GFM table as a pre block of aligned columns: Telegram has
// no tables, and only a monospace font keeps columns lined up.
func (r *renderer) table(t *east.Table) {
	r.code(strings.TrimRight(tableText(t, r.src), " \n"), Entity{Type: Pre})
}

// writeRow writes one row, cells padded to widths and joined by " | ".
func writeRow(b *strings.Builder, row []string, widths []int, align []east.Alignment) {
	var line strings.Builder
	for i, w := range widths {
		if i > 0 {
			line.WriteString(" | ")
		}
		c := ""
		if i < len(row) {
			c = row[i]
		}
		pad := w - Width(c)
		a := east.AlignNone
		if i < len(align) {
			a = align[i]
		}
		switch a {
		case east.AlignRight:
			line.WriteString(strings.Repeat(" ", pad) + c)
		case east.AlignCenter:
			line.WriteString(strings.Repeat(" ", pad/2) + c + strings.Repeat(" ", pad-pad/2))
		default:
			line.WriteString(c + strings.Repeat(" ", pad))
		}
	}
	b.WriteString(strings.TrimRight(line.String(), " "))
}

// Width is the number of monospace columns s takes: East Asian wide and
// full-width characters and most emoji take two, combining marks and
// zero-width characters none.
func Width(s string) int {
	n := 0
	for _, c := range s {
		n += runeWidth(c)
	}
	return n
}

// runeWidth approximates the East Asian Width property (UAX #11) for the
// ranges that models actually write: CJK, Hangul, full-width forms, emoji.
func runeWidth(c rune) int {
	switch {
	case c == 0x200B || c == 0x200C || c == 0x200D || c == 0xFEFF,
		unicode.Is(unicode.Mn, c), unicode.Is(unicode.Me, c),
		c >= 0xFE00 && c <= 0xFE0F, c >= 0x1F3FB && c <= 0x1F3FF:
		return 0
	case c >= 0x1100 && c <= 0x115F, c >= 0x2E80 && c <= 0x303E, c >= 0x3041 && c <= 0x33FF,
		c >= 0x3400 && c <= 0x4DBF, c >= 0x4E00 && c <= 0x9FFF, c >= 0xA000 && c <= 0xA4CF,
		c >= 0xAC00 && c <= 0xD7A3, c >= 0xF900 && c <= 0xFAFF, c >= 0xFE30 && c <= 0xFE4F,
		c >= 0xFF00 && c <= 0xFF60, c >= 0xFFE0 && c <= 0xFFE6,
		c >= 0x1F300 && c <= 0x1F64F, c >= 0x1F900 && c <= 0x1F9FF, c >= 0x1FA70 && c <= 0x1FAFF,
		c >= 0x20000 && c <= 0x3FFFD:
		return 2
	}
	return 1
}
