package markdown

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"
)

var update = flag.Bool("update", false, "rewrite the .golden files from the renderer's output")

// golden is what a .golden file holds: the text Telegram shows and the
// entities that format it.
type golden struct {
	Text     string   `json:"text"`
	Entities []Entity `json:"entities"`
}

// TestTelegramGolden renders every testdata/*.md (real model answers) and
// compares with testdata/*.golden; run with -update to regenerate them
// after a deliberate change, then review the diff.
func TestTelegramGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			md, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			text, ents := Telegram(string(md))
			if err := Check(text, ents); err != nil {
				t.Fatalf("invalid entities: %v", err)
			}
			got, err := json.MarshalIndent(golden{text, ents}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := strings.TrimSuffix(f, ".md") + ".golden"
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if string(got) != string(want) {
				t.Errorf("output differs from %s (run with -update and review the diff):\n%s", path, got)
			}
		})
	}
}

// entityText is the text an entity covers.
func entityText(text string, e Entity) string {
	u := utf16.Encode([]rune(text))
	return string(utf16.Decode(u[e.Offset : e.Offset+e.Length]))
}

// TestTelegramShowsFormattingNotMarkers checks what a reader sees for
// common constructs: formatting, no Markdown markers.
func TestTelegramShowsFormattingNotMarkers(t *testing.T) {
	cases := []struct {
		md, text string
		want     []string // "type:covered text"
	}{
		{"**bold** and *it* and ~~old~~", "bold and it and old", []string{"bold:bold", "italic:it", "strikethrough:old"}},
		{"# Title", "Title", []string{"bold:Title"}},
		{"use `a<b>&c`", "use a<b>&c", []string{"code:a<b>&c"}},
		{"```go\nx := 1\n```", "x := 1", []string{"pre:x := 1"}},
		{"[Go](https://go.dev/(x))", "Go", []string{"text_link:Go"}},
		{"**a `c` b**", "a c b", []string{"bold:a ", "code:c", "bold: b"}},
		{"> **q**", "q", []string{"blockquote:q", "bold:q"}},
		{"😀 **é😀**", "😀 é😀", []string{"bold:é😀"}},
		{"[x](javascript:alert(1))", "x (javascript:alert(1))", nil},
		{"<b>hi</b>", "<b>hi</b>", nil},
		{"- a\n  - b\n1. c", "• a\n  ◦ b\n\n1. c", nil},
	}
	for _, c := range cases {
		text, ents := Telegram(c.md)
		if err := Check(text, ents); err != nil {
			t.Errorf("%q: %v", c.md, err)
		}
		if text != c.text {
			t.Errorf("%q: text %q, want %q", c.md, text, c.text)
		}
		var got []string
		for _, e := range ents {
			got = append(got, e.Type+":"+entityText(text, e))
		}
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%q: entities %q, want %q", c.md, got, c.want)
		}
	}
}

// TestTableAlignsWideCharacters checks that CJK cells count two columns,
// so the separators line up in a monospace font.
func TestTableAlignsWideCharacters(t *testing.T) {
	text, ents := Telegram("| a | b |\n|---|---|\n| 中文 | x |\n| abcd | y |")
	want := "a    | b\n---- | -\n中文 | x\nabcd | y"
	if text != want || len(ents) != 1 || ents[0].Type != Pre {
		t.Fatalf("got %q %+v, want %q in one pre", text, ents, want)
	}
}
