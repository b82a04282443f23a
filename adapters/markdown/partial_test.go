package markdown

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPartialClosesOpenSpans: previews of a reply being written show the
// formatting already, not the markers.
func TestPartialClosesOpenSpans(t *testing.T) {
	cases := []struct{ md, text, types string }{
		{"Hello **wor", "Hello wor", "bold"},
		{"use `fmt.Prin", "use fmt.Prin", "code"},
		{"a *b **c", "a b c", "italic,bold"},
		{"done **", "done", ""},
		{"~~old~~ and ~~ne", "old and ne", "strikethrough,strikethrough"},
		{"snake_case_na", "snake_case_na", ""},
		{"2 * 3 = 6", "2 * 3 = 6", ""},
		{"```go\nfunc ma", "func ma", "pre"},
		{"**done** now", "done now", "bold"},
		{"escaped \\*", "escaped *", ""},
		// A link being typed shows its words, never brackets or half a URL.
		{"See [the docs](https://exa", "See the docs", ""},
		{"See [the docs](", "See the docs", ""},
		{"See [the docs]", "See the docs", ""},
		{"See [the do", "See the do", ""},
		{"![chart](http", "chart", ""},
		{"[**bold** link](ht", "bold link", "bold"},
		{"done: [a](https://a.example) and [b](https://b.ex", "done: a and b", "text_link"},
		{"`x [y](z", "x [y](z", "code"},
		{"\\[not a link](ht", "[not a link](ht", ""},
		// A closing fence half typed never shows as code.
		{"```py\nprint(1)\n``", "print(1)", "pre"},
		{"```\nx\n```", "x", "pre"},
		{"~~~\nx\n~", "x", "pre"},
	}
	for _, c := range cases {
		text, ents := TelegramPartial(c.md)
		var types []string
		for _, e := range ents {
			types = append(types, e.Type)
		}
		if text != c.text || strings.Join(types, ",") != c.types {
			t.Errorf("%q: %q %v, want %q %s", c.md, text, types, c.text, c.types)
		}
		if err := Check(text, ents); err != nil {
			t.Errorf("%q: %v", c.md, err)
		}
	}
}

// TestPartialTableShowsAsItsBlock: a table whose header or delimiter row
// is being written already shows as the monospace block of the finished
// table, never as raw pipes.
func TestPartialTableShowsAsItsBlock(t *testing.T) {
	cases := []struct{ partial, final string }{
		{"| Name | Age |", "| Name | Age |\n|---|---|"},
		{"| Name | Age |\n|--", "| Name | Age |\n|---|---|"},
		{"| Name | Age |\n| :-- | -", "| Name | Age |\n|---|---|"},
		{"| Name | Ag", "| Name | Ag |\n|---|---|"},
		{"Results:\n\n| Name | Age |\n|---|---|\n| Bob | 4", "Results:\n\n| Name | Age |\n|---|---|\n| Bob | 4 |"},
		{"Intro line\n| a | b |", "Intro line\n| a | b |\n|---|---|"},
		// A cell being typed has its spans closed, as the finished cell will.
		{"| a | b |\n|---|---|\n| **x", "| a | b |\n|---|---|\n| **x** |"},
		{"| a | b |\n|---|---|\n| 1 | `co", "| a | b |\n|---|---|\n| 1 | `co` |"},
	}
	for _, c := range cases {
		text, ents := TelegramPartial(c.partial)
		wt, we := Telegram(c.final)
		if text != wt || len(ents) != len(we) {
			t.Errorf("%q: %q %+v, want %q %+v", c.partial, text, ents, wt, we)
		}
		if strings.Contains(text, "|-") {
			t.Errorf("%q shows a raw delimiter row: %q", c.partial, text)
		}
	}
}

// TestPartialPrefixesOfTheCorpus renders every prefix of the corpus (at
// line and word ends, as streaming shows them): always valid entities, and
// a complete answer renders as Telegram renders it.
func TestPartialPrefixesOfTheCorpus(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.md")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		md := string(b)
		for i := range len(md) {
			if md[i] != ' ' && md[i] != '\n' {
				continue
			}
			text, ents := TelegramPartial(md[:i])
			if err := Check(text, ents); err != nil {
				t.Fatalf("%s prefix %d: %v", f, i, err)
			}
		}
		wt, we := Telegram(md)
		pt, pe := TelegramPartial(md)
		if wt != pt || len(we) != len(pe) {
			t.Errorf("%s: complete answer renders differently as a preview", f)
		}
	}
}

// FuzzTelegramPartial: no prefix of any input breaks the entity rules.
func FuzzTelegramPartial(f *testing.F) {
	for _, s := range []string{"**a `b", "~~x *y _z", "\\**", "`` a ` b", "**\n\n**"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		text, ents := TelegramPartial(md)
		if err := Check(text, ents); err != nil {
			t.Fatalf("%q: %v", md, err)
		}
	})
}
