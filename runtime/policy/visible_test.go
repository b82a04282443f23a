package policy

import "testing"

func TestVisibleEscapesWhatReadsDifferently(t *testing.T) {
	for _, tc := range []struct{ in, want, line string }{
		{"plain text, ünïcödé, 中文, emoji 🚀", "plain text, ünïcödé, 中文, emoji 🚀", "plain text, ünïcödé, 中文, emoji 🚀"},
		{"rm -rf / #\u202ehs.txt", `rm -rf / #\u202ehs.txt`, `rm -rf / #\u202ehs.txt`},
		{"\u202a\u202b\u202c\u202d\u202e", `\u202a\u202b\u202c\u202d\u202e`, `\u202a\u202b\u202c\u202d\u202e`},
		{"\u2066\u2067\u2068\u2069", `\u2066\u2067\u2068\u2069`, `\u2066\u2067\u2068\u2069`},
		{"a\u200eb\u200fc\u061cd", `a\u200eb\u200fc\u061cd`, `a\u200eb\u200fc\u061cd`},
		{"zero\u200bwidth\u200d\ufeff", `zero\u200bwidth\u200d\ufeff`, `zero\u200bwidth\u200d\ufeff`},
		{"tag\U000e0041", `tag\U000e0041`, `tag\U000e0041`},
		{"line\u2028para\u2029", `line\u2028para\u2029`, `line\u2028para\u2029`},
		{"bell\a del\x7f c1\u0085", `bell\u0007 del\u007f c1\u0085`, `bell\u0007 del\u007f c1\u0085`},
		{"two\nlines\tand\rcr", "two\nlines\tand\\u000dcr", `two\u000alines\u0009and\u000dcr`},
		{`a\u202e b`, `a\u202e b`, `a\u202e b`}, // already an escape: kept
	} {
		if got := Visible(tc.in); got != tc.want {
			t.Errorf("Visible(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := VisibleLine(tc.in); got != tc.line {
			t.Errorf("VisibleLine(%q) = %q, want %q", tc.in, got, tc.line)
		}
	}
}
