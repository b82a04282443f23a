package markdown

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzTelegram checks that no input, however malformed, gives entities
// Telegram would reject: Check's rules, within the text, no surrogate
// pair cut. The corpus and seeds are real model answers and edge cases.
func FuzzTelegram(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.md")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err == nil {
			f.Add(string(b))
		}
	}
	for _, s := range []string{"**a `b` c**", "> `x` [y](https://z)", "[a **b `c`**](https://x)", "😀*😀*😀",
		"| a |\n|---|\n| `b` |", "***", "- > ```\n  > x", "[x](tg://resolve?domain=a)", "\x00*\x00*", "\xff**x**"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		text, ents := Telegram(md)
		if err := Check(text, ents); err != nil {
			t.Fatalf("Telegram(%q) = %q, %+v: %v", md, text, ents, err)
		}
		if text != strings.TrimSpace(text) {
			t.Fatalf("Telegram(%q) = %q: white space at an end", md, text)
		}
	})
}
