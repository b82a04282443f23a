package policy

import (
	"fmt"
	"strings"
	"unicode"
)

// Visible returns s for a person to read before approving it: every
// character that changes how the text around it reads without showing
// itself is written as an escape like \u202e. These are the bidi
// controls (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C), which
// can make "rm -rf / #txt.sh" read as something harmless, the other
// format characters (zero-width spaces and joiners, U+FEFF, tag
// characters: Unicode category Cf), line and paragraph separators, and
// control characters other than newline and tab. Everything else,
// including a backslash already in s, is kept as it is.
func Visible(s string) string { return escapeHidden(s, false) }

// VisibleLine is Visible for text that must stay on one line, such as a
// name or an identity: newlines and tabs are escaped too, so a name
// cannot start a line of its own in an approval request.
func VisibleLine(s string) string { return escapeHidden(s, true) }

func escapeHidden(s string, oneLine bool) string {
	hidden := func(c rune) bool {
		if c == '\n' || c == '\t' {
			return oneLine
		}
		return unicode.IsControl(c) || unicode.In(c, unicode.Cf, unicode.Zl, unicode.Zp)
	}
	if strings.IndexFunc(s, hidden) < 0 {
		return s
	}
	var b strings.Builder
	for _, c := range s {
		switch {
		case !hidden(c):
			b.WriteRune(c)
		case c > 0xffff:
			fmt.Fprintf(&b, `\U%08x`, c)
		default:
			fmt.Fprintf(&b, `\u%04x`, c)
		}
	}
	return b.String()
}
