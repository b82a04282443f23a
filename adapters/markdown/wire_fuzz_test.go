package markdown_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/shipmyagent/ship/adapters/markdown"
	"github.com/shipmyagent/ship/internal/faketelegram"
)

// FuzzRendersPassTheFake holds every render to the entity rules of the
// fake Bot API (the same validator sendMessage applies): Telegram(),
// TelegramPartial() and each part of Split at Telegram's 4,096. No part is
// over 4,096 UTF-16 units or cut inside a surrogate pair, and the parts
// together are the whole text but for the white space at the cuts.
func FuzzRendersPassTheFake(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.md")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(string(b))
		}
	}
	for _, s := range []string{"**a `b", "[x](https://a.b/c_(d)) *e*", "| a | b |\n|--", "😀**😀", "> **q\n\n```\n<>&",
		"[half](htt", strings.Repeat("字😀 **b** ", 700)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		text, ents := markdown.Telegram(md)
		wire(t, "Telegram", text, ents)
		ptext, pents := markdown.TelegramPartial(md)
		wire(t, "TelegramPartial", ptext, pents)
		parts := markdown.Split(text, ents, markdown.MaxTelegramText)
		rest := text
		for i, p := range parts {
			if n := len(utf16.Encode([]rune(p.Text))); n > markdown.MaxTelegramText || !utf8.ValidString(p.Text) {
				t.Fatalf("part %d: %d UTF-16 units (valid UTF-8: %v)", i, n, utf8.ValidString(p.Text))
			}
			wire(t, "Split part", p.Text, p.Entities)
			rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
			if !strings.HasPrefix(rest, p.Text) {
				t.Fatalf("part %d %q is not the next piece of the text", i, p.Text)
			}
			rest = rest[len(p.Text):]
		}
		if strings.TrimSpace(rest) != "" {
			t.Fatalf("the parts leave out %q", rest)
		}
	})
}

// wire checks text and entities as the fake's sendMessage would.
func wire(t *testing.T, what, text string, ents []markdown.Entity) {
	t.Helper()
	raw, err := json.Marshal(ents)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) == 0 {
		raw = nil
	}
	if err := faketelegram.CheckEntities(text, string(raw)); err != nil {
		t.Fatalf("%s gives %q with %s, which the Bot API refuses: %v", what, text, raw, err)
	}
}
