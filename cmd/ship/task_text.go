package main

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// termSafe shows text read from files (a task's cron, chat key, last
// result, error) so that it cannot drive the terminal it is printed on: C0
// and C1 control characters (ESC starts the sequences that move the
// cursor, recolour, retitle the window or write the clipboard), DEL, the
// bidirectional overrides that reorder what is shown, and invalid UTF-8
// are written as visible escapes like \x1b or \u202e. Tabs and newlines
// are escaped too: they would break the table's columns and rows.
func termSafe(s string) string {
	clean := true
	for _, r := range s {
		if unsafeRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x80 && unsafeRune(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// unsafeRune reports whether r must not reach a terminal raw.
func unsafeRune(r rune) bool {
	switch {
	case r == utf8.RuneError:
		return true
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		// Bidirectional embeddings, overrides, isolates and marks.
		return true
	}
	return false
}
