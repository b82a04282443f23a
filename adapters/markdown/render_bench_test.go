package markdown

import (
	"os"
	"testing"
)

// BenchmarkRender measures what rendering costs a reply on each platform:
// the 11,040-character incident review of the golden corpus (tables, code,
// nested lists, CJK), the longest answer a model gives in one message.
func BenchmarkRender(b *testing.B) {
	raw, err := os.ReadFile("testdata/incident-review.md")
	if err != nil {
		b.Fatal(err)
	}
	md := string(raw)
	for _, c := range []struct {
		name string
		fn   func(string)
	}{
		{"telegram", func(s string) { text, ents := Telegram(s); _ = Split(text, ents, MaxTelegramText) }},
		{"telegram-preview", func(s string) { _, _ = TelegramPartial(s[:len(s)/2]) }},
		{"feishu", func(s string) { _ = Feishu(s) }},
		{"plain", func(s string) { _ = Plain(s) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(md)))
			for b.Loop() {
				c.fn(md)
			}
		})
	}
}
