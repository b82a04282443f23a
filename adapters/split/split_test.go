package split

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// paragraphs returns n paragraphs of about size runes each, separated by
// blank lines.
func paragraphs(n, size int) string {
	ps := make([]string, n)
	for i := range ps {
		var b strings.Builder
		for w := 0; b.Len() < size-12; w++ {
			fmt.Fprintf(&b, "p%d-word%d ", i, w)
		}
		ps[i] = strings.TrimSpace(b.String()) + "."
	}
	return strings.Join(ps, "\n\n")
}

// codeBlock returns a fenced block of the given language with n code lines.
func codeBlock(lang string, n int) string {
	var b strings.Builder
	b.WriteString("```" + lang + "\n")
	for i := range n {
		fmt.Fprintf(&b, "\tx%d := compute(%d) // step %d\n", i, i, i)
	}
	b.WriteString("```")
	return b.String()
}

func TestSplitTable(t *testing.T) {
	cases := []struct {
		name  string
		text  string
		limit int
		parts int // expected number of parts, or -1 for any
	}{
		{"empty", "", 4096, 0},
		{"blank", " \n\t\r\n  ", 4096, 0},
		{"short", "hello, world", 4096, 1},
		{"short with blank lines kept", "\n\nhello\n\n", 4096, 1},
		{"exactly the limit", strings.Repeat("a", 4096), 4096, 1},
		{"one over the limit", strings.Repeat("a", 4097), 4096, 2},
		{"limit raised to minimum", strings.Repeat("b", 30), 5, 1},
		{"paragraphs", paragraphs(32, 300), 4096, 3},
		{"lines without blank lines", strings.Repeat("some line of text here\n", 500), 4096, 3},
		{"code block straddling", paragraphs(10, 300) + "\n\n" + codeBlock("go", 150) + "\n\nThe end.", 4096, -1},
		{"unclosed code block", paragraphs(3, 300) + "\n\n" + codeBlock("py", 300)[:8000], 4096, -1},
		{"tilde fence", paragraphs(3, 100) + "\n~~~~ sh\n" + strings.Repeat("echo hi\n", 50) + "~~~~\ntail", 100, -1},
		{"indented fence", "intro\n   ```js\n" + strings.Repeat("let a = 1;\n", 20) + "   ```\nafter", 64, -1},
		{"crlf", strings.ReplaceAll(paragraphs(8, 80)+"\n\n"+codeBlock("c", 10), "\n", "\r\n"), 100, -1},
		{"tabs", strings.Repeat("\tcol1\tcol2\tcol3\n", 40), 64, -1},
		{"long line of words", strings.Repeat("lorem ipsum dolor ", 600), 4096, 3},
		{"long line without spaces", strings.Repeat("x", 10000), 4096, 3},
		{"long line in a block", "```\n" + strings.Repeat("y", 300) + "\n```", 100, 4},
		{"chinese", strings.Repeat("这是一个很长的中文句子，没有空格。", 600), 4096, 3},
		{"emoji zwj", strings.Repeat("👨‍👩‍👧‍👦👍🏽❤️", 1500), 4096, -1},
		{"combining accents", strings.Repeat("e\u0301a\u0300o\u0302", 3000), 4096, -1},
		{"huge indentation", "a\n" + strings.Repeat(" ", 200) + "b\nc", 64, -1},
		{"fence line too long to be one", "```" + strings.Repeat("i", 40) + "\n" + strings.Repeat("z\n", 40), 32, -1},
		{"empty block", paragraphs(2, 40) + "\n```\n```\n" + paragraphs(2, 40), 64, -1},
		{"blank line too long after an opening fence", "```go\n" + strings.Repeat(" ", 500) + "\ncode\n```", 100, 2},
		{"cut before a closing fence avoided", "intro\n```\n" + strings.Repeat("c", 40) + "\n" + strings.Repeat("d", 40) + "\n```\nafter", 64, -1},
		{"trailing blank lines", paragraphs(3, 60) + strings.Repeat("\n \t", 100), 64, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parts := Split(tc.text, tc.limit)
			checkParts(t, tc.text, tc.limit, parts)
			if tc.parts >= 0 && len(parts) != tc.parts {
				t.Fatalf("got %d parts, want %d: %q", len(parts), tc.parts, parts)
			}
		})
	}
}

// regressions are inputs that once broke a guarantee (found by fuzzing and
// random testing); FuzzSplit also seeds with them.
var regressions = []string{
	"                                ```",
	"`                               ```",
	"```\n                    ```````\n\x87",
	"```\n```\n ``````\r\naaaaaaaaaa\t\xe4\xb8```\n",
	"👨\u200d👩\u200d👧\n中文" + strings.Repeat(" ", 43) + "\n\n~\u0301   \n```\n\n\ngo",
	"```\n``rd word word word worddword word word worrdword word word worddword word word worrdword word word " +
		"wordd word word word word word word word     \r\n\xef" + strings.Repeat(" ", 23) + "d",
	"~\n ```` \r\r\n```\n~~~~~~~~~~~~~~~\x87\n\n",
	"\x80\xe3\x80\n```go\n```go\n```\t\r\r\nabcde  ```",
	"```\U0001F468\u200d\U0001F469\u200d\U0001F467\taax\u200d```go\n" + strings.Repeat("```go\n", 14) + "gox\r\nxxxxxx\n\nx",
}

func TestRegressions(t *testing.T) {
	for i, text := range regressions {
		for _, limit := range []int{32, 100, 4096} {
			t.Run(fmt.Sprintf("%d/%d", i, limit), func(t *testing.T) {
				checkParts(t, text, limit, Split(text, limit))
			})
		}
	}
}

// TestProperties checks the guarantees on random Markdown-like texts.
func TestProperties(t *testing.T) {
	tokens := []string{
		"```", "```go\n", "\n```\n", "~~~~ py\n", "   ```\n", "`", "~", " ", "  ", "    ",
		"\n", "\n\n", "\r\n", "\r", "\t", "\u3000", "\u00a0", "word ", "abcdefghij",
		"中文", "👨\u200d👩\u200d👧", "👍🏽", "e\u0301", "\u200d", "\ufe0f", "\xff",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		var b strings.Builder
		for range rng.IntN(150) {
			tok := tokens[rng.IntN(len(tokens))]
			if rng.IntN(8) == 0 {
				tok = strings.Repeat(tok, rng.IntN(60))
			}
			b.WriteString(tok)
		}
		text := b.String()
		for _, limit := range []int{32, 100, 4096} {
			checkParts(t, text, limit, Split(text, limit))
		}
	}
}

func TestShortTextUnchanged(t *testing.T) {
	text := "  *bold*\n\n```go\nunclosed"
	parts := Split(text, 4096)
	if len(parts) != 1 || parts[0] != text {
		t.Fatalf("got %q", parts)
	}
	if parts := Split(" \n ", 4096); parts != nil {
		t.Fatalf("blank text gave %q", parts)
	}
}

func TestParagraphCuts(t *testing.T) {
	text := paragraphs(32, 300)
	if n := utf8.RuneCountInString(text); n < 9000 {
		t.Fatalf("text has %d runes", n)
	}
	parts := Split(text, 4096)
	checkParts(t, text, 4096, parts)
	if len(parts) != 3 {
		t.Fatalf("got %d parts", len(parts))
	}
	if got := strings.Join(parts, "\n\n"); got != text {
		t.Fatalf("joining the parts with a blank line does not give the text back")
	}
	for i, p := range parts {
		if !strings.HasSuffix(p, ".") {
			t.Errorf("part %d does not end at a paragraph: ...%q", i, p[len(p)-20:])
		}
	}
}

func TestCodeBlockStraddlingCut(t *testing.T) {
	text := paragraphs(10, 300) + "\n\n" + codeBlock("go", 150) + "\n\nThe end."
	parts := Split(text, 4096)
	checkParts(t, text, 4096, parts)
	if len(parts) < 3 {
		t.Fatalf("got %d parts", len(parts))
	}
	for i, p := range parts[1:] {
		if strings.Contains(p, "\tx") && !strings.HasPrefix(p, "```go\n") {
			t.Errorf("part %d holds code but does not start with ```go: %q", i+1, p[:20])
		}
	}
	if !strings.HasSuffix(parts[1], "\n```") {
		t.Errorf("part 1 does not close the fence: ...%q", parts[1][len(parts[1])-20:])
	}
}

func TestBlockThatFitsMovesWhole(t *testing.T) {
	block := codeBlock("go", 60)
	text := paragraphs(10, 300) + "\n\n" + block + "\n\nThe end."
	parts := Split(text, 4096)
	checkParts(t, text, 4096, parts)
	if len(parts) != 2 || !strings.HasPrefix(parts[1], block) {
		t.Fatalf("the block was not moved whole to part 2: %d parts", len(parts))
	}
}

func TestUnclosedFenceStaysOpen(t *testing.T) {
	text := "intro\n```sh\n" + strings.Repeat("echo step\n", 30)
	parts := Split(text, 100)
	checkParts(t, text, 100, parts)
	last := parts[len(parts)-1]
	if !strings.HasPrefix(last, "```sh\n") || strings.HasSuffix(last, "```") {
		t.Fatalf("last part: %q", last)
	}
	for _, p := range parts[1 : len(parts)-1] {
		if !strings.HasPrefix(p, "```sh\n") || !strings.HasSuffix(p, "\n```") {
			t.Fatalf("middle part: %q", p)
		}
	}
}

func TestLongLineCuts(t *testing.T) {
	words := strings.TrimSpace(strings.Repeat("lorem ipsum dolor ", 600))
	for i, p := range Split(words, 4096) {
		if strings.HasPrefix(p, " ") || strings.HasSuffix(p, " ") {
			t.Errorf("part %d keeps the space at the cut: %q...%q", i, p[:10], p[len(p)-10:])
		}
		for _, w := range strings.Fields(p) {
			if w != "lorem" && w != "ipsum" && w != "dolor" {
				t.Fatalf("part %d cuts a word: %q", i, w)
			}
		}
	}
	solid := strings.Repeat("x", 10000)
	parts := Split(solid, 4096)
	if strings.Join(parts, "") != solid {
		t.Fatalf("pieces of a solid line do not join back")
	}
}

func TestMultibyte(t *testing.T) {
	texts := []string{
		strings.Repeat("这是一个很长的中文句子，没有空格。", 600),
		strings.Repeat("👨‍👩‍👧‍👦", 2000),
		strings.Repeat("👍🏽", 3000),
		strings.Repeat("e\u0301", 5000),
		strings.Repeat("❤️", 5000),
	}
	for _, text := range texts {
		for _, limit := range []int{32, 100, 4096} {
			parts := Split(text, limit)
			checkParts(t, text, limit, parts)
			for i, p := range parts {
				r, _ := utf8.DecodeRuneInString(p)
				l, _ := utf8.DecodeLastRuneInString(p)
				if attaches(r) || l == zwj {
					t.Fatalf("limit %d: part %d breaks a character: %q", limit, i, p)
				}
			}
			if strings.Join(parts, "") != text {
				t.Fatalf("limit %d: pieces do not join back", limit)
			}
		}
	}
}

func BenchmarkSplit(b *testing.B) {
	var sb strings.Builder
	for sb.Len() < 100_000 {
		sb.WriteString("## Section\n\n" + paragraphs(4, 400) + "\n\n" + codeBlock("go", 40) + "\n\n- item one\n- item two\n\n")
	}
	text := sb.String()
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		Split(text, 4096)
	}
}
