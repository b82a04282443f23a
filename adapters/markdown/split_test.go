package markdown

import (
	"os"
	"strings"
	"testing"
	"unicode"
	"unicode/utf16"
)

// checkParts asserts what every split must give: parts within limit, each
// valid on its own, and together the whole text but for white space at
// the cuts.
func checkParts(t *testing.T, text string, ents []Entity, limit int, parts []Part) {
	t.Helper()
	var joined strings.Builder
	for i, p := range parts {
		if n := len(utf16.Encode([]rune(p.Text))); n > max(limit, minSplitLimit) {
			t.Fatalf("part %d has %d UTF-16 units, limit %d", i, n, limit)
		}
		if p.Text == "" || p.Text != strings.TrimSpace(p.Text) {
			t.Fatalf("part %d %q is empty or has white space at an end", i, p.Text)
		}
		if err := Check(p.Text, p.Entities); err != nil {
			t.Fatalf("part %d: %v", i, err)
		}
		joined.WriteString(p.Text)
	}
	squash := func(s string) string { return strings.Join(strings.FieldsFunc(s, unicode.IsSpace), "") }
	if squash(joined.String()) != squash(text) {
		t.Fatalf("parts lose or add text")
	}
}

// TestSplitLongAnswer splits the 10k-character answer for Telegram: three
// parts or more, cut between paragraphs, each with its own valid entities, and
// the Go code blocks still pre blocks with their language.
func TestSplitLongAnswer(t *testing.T) {
	md, err := os.ReadFile("testdata/long.md")
	if err != nil {
		t.Fatal(err)
	}
	text, ents := Telegram(string(md))
	parts := Split(text, ents, MaxTelegramText)
	checkParts(t, text, ents, MaxTelegramText, parts)
	if len(parts) < 2 {
		t.Fatalf("%d parts for %d units", len(parts), len(utf16.Encode([]rune(text))))
	}
	goBlocks := 0
	for i, p := range parts {
		for _, e := range p.Entities {
			if e.Type == Pre && e.Language == "go" {
				goBlocks++
			}
		}
		if i < len(parts)-1 && !strings.Contains(text, p.Text+"\n\n") {
			t.Errorf("part %d does not end at a paragraph boundary", i)
		}
	}
	if goBlocks != 9 {
		t.Errorf("%d go pre blocks in the parts, want 9", goBlocks)
	}
}

// TestSplitCutsPreInTwo checks that a code block longer than a message is
// cut at a line and stays a pre block with its language in both parts.
func TestSplitCutsPreInTwo(t *testing.T) {
	var b strings.Builder
	b.WriteString("```python\n")
	for i := range 40 {
		b.WriteString("print('line " + strings.Repeat("x", i%7) + "')\n")
	}
	b.WriteString("```")
	text, ents := Telegram(b.String())
	parts := Split(text, ents, 300)
	checkParts(t, text, ents, 300, parts)
	if len(parts) < 2 {
		t.Fatalf("%d parts", len(parts))
	}
	for i, p := range parts {
		if len(p.Entities) != 1 || p.Entities[0].Type != Pre || p.Entities[0].Language != "python" ||
			p.Entities[0].Offset != 0 || p.Entities[0].Length != len(utf16.Encode([]rune(p.Text))) {
			t.Fatalf("part %d: entities %+v, want one python pre over the part", i, p.Entities)
		}
		if !strings.HasSuffix(p.Text, "')") {
			t.Fatalf("part %d cut mid-line: %q", i, p.Text)
		}
	}
}

// TestSplitNeverCutsSurrogatesOrEmoji checks hard cuts in a line of emoji
// without spaces: no part holds half a surrogate pair or half a ZWJ family.
func TestSplitNeverCutsSurrogatesOrEmoji(t *testing.T) {
	text := "**" + strings.Repeat("😀👨‍👩‍👧", 30) + "**"
	plain, ents := Telegram(text)
	parts := Split(plain, ents, 21)
	checkParts(t, plain, ents, 21, parts)
	for i, p := range parts {
		if strings.HasPrefix(p.Text, "\u200d") || strings.HasSuffix(p.Text, "\u200d") {
			t.Fatalf("part %d cuts a ZWJ sequence: %q", i, p.Text)
		}
		if len(p.Entities) != 1 || p.Entities[0].Type != Bold {
			t.Fatalf("part %d: entities %+v, want bold", i, p.Entities)
		}
	}
}

// TestSplitShortTextIsOnePart checks the common case: no cut at all.
func TestSplitShortTextIsOnePart(t *testing.T) {
	text, ents := Telegram("**hi** there")
	parts := Split(text, ents, MaxTelegramText)
	if len(parts) != 1 || parts[0].Text != text || len(parts[0].Entities) != 1 {
		t.Fatalf("got %+v", parts)
	}
	if Split(" \n ", nil, MaxTelegramText) != nil {
		t.Fatal("white space gave parts")
	}
}

// FuzzSplit checks that rendering then splitting any input at any limit
// gives parts Telegram accepts.
func FuzzSplit(f *testing.F) {
	f.Add("**a `b` c**\n\n```go\nx\ny\n```\n> q", 16)
	f.Add(strings.Repeat("😀 *é* ", 50), 17)
	f.Fuzz(func(t *testing.T, md string, limit int) {
		limit = 16 + abs(limit)%200
		text, ents := Telegram(md)
		checkParts(t, text, ents, limit, Split(text, ents, limit))
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
