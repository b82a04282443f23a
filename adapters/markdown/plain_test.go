package markdown

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

// plainInputs are the corpus shared with the Telegram renderer
// (testdata/*.md, real model answers) and the plain-only cases in
// testdata/plain/*.md.
func plainInputs(t testing.TB) []string {
	shared, err := filepath.Glob("testdata/*.md")
	if err != nil {
		t.Fatal(err)
	}
	own, err := filepath.Glob("testdata/plain/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files := append(shared, own...)
	if len(files) == 0 {
		t.Fatal("no testdata")
	}
	return files
}

// TestPlainGolden renders every corpus file and compares it with
// testdata/plain/<name>.txt; run with -update to regenerate them after a
// deliberate change, then review the diff.
func TestPlainGolden(t *testing.T) {
	for _, f := range plainInputs(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			md, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got := Plain(string(md)) + "\n"
			path := filepath.Join("testdata", "plain", strings.TrimSuffix(filepath.Base(f), ".md")+".txt")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s (run with -update and review the diff):\n%s", path, got)
			}
		})
	}
}

// TestPlainReadsAsWritten checks, case by case, what a reader of a plain
// text chat sees.
func TestPlainReadsAsWritten(t *testing.T) {
	for _, tc := range []struct{ name, md, want string }{
		{"emphasis markers go", "**bold**, _it_, ~~gone~~ and ***both***", "bold, it, gone and both"},
		{"heading is its own line", "# Title\ntext after", "Title\n\ntext after"},
		{"nested list", "- a\n  - b\n    1. c\n- d", "• a\n  ◦ b\n    1. c\n• d"},
		{"ordered start", "3. three\n4. four", "3. three\n4. four"},
		{"code block verbatim", "before\n\n```go\nif a < b && c > d {\n\treturn \"<&>\"\n}\n```\n\nafter",
			"before\n\nif a < b && c > d {\n\treturn \"<&>\"\n}\n\nafter"},
		{"inline code verbatim", "run `**not bold**` now", "run **not bold** now"},
		{"link with text", "see [the docs](https://x.io/a_(b))", "see the docs (https://x.io/a_(b))"},
		{"link equal to its url", "[https://x.io](https://x.io) and <https://y.io>", "https://x.io and https://y.io"},
		{"image", "![a chart](https://x.io/c.png)", "a chart (https://x.io/c.png)"},
		{"quote", "> one\n> two\n>\n> three", "│ one\n│ two\n│\n│ three"},
		{"list in quote", "> - a\n> - b", "│ • a\n│ • b"},
		{"escapes", `\*\*literal\*\* and 2 \* 3`, "**literal** and 2 * 3"},
		{"table aligns wide characters", "| 名字 | n |\n|---|--:|\n| 苹果 | 1 |\n| kiwi | 22 |",
			"名字 |  n\n---- | --\n苹果 |  1\nkiwi | 22"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Plain(tc.md); got != tc.want {
				t.Errorf("Plain(%q) =\n%s\nwant\n%s", tc.md, got, tc.want)
			}
		})
	}
}

// TestPlainLongAnswer renders a 10,000-character answer whole: nothing is
// cut or lost on the way.
func TestPlainLongAnswer(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 10_000; i++ {
		b.WriteString("## Step\n\nSome **important** text with `code` and a [link](https://x.io/p).\n\n- item one\n- item two\n\n")
	}
	got := Plain(b.String())
	if strings.Contains(got, "**") || strings.Contains(got, "##") {
		t.Fatalf("markers left in a long answer: %.200q", got)
	}
	if n, want := strings.Count(got, "important"), strings.Count(b.String(), "important"); n != want {
		t.Fatalf("%d of %d paragraphs arrived", n, want)
	}
}

// markerChars are the characters Markdown uses as emphasis, heading and
// code markers.
const markerChars = "*_~#`"

// literalText is every piece of md's text that Plain keeps as written
// (text with escapes resolved, code, URLs, raw HTML), in document order: the
// only places a marker character may come from.
func literalText(md string) string {
	src := []byte(strings.ToValidUTF8(md, "\uFFFD"))
	doc := parser().Parser().Parse(text.NewReader(src))
	var b strings.Builder
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Text:
			b.WriteString(textValue(n, src))
		case *ast.String:
			b.Write(n.Value)
		case *ast.CodeSpan:
			b.WriteString(codeSpanText(n, src))
			return ast.WalkSkipChildren, nil
		case *ast.FencedCodeBlock, *ast.CodeBlock, *ast.HTMLBlock:
			b.WriteString(blockLines(n, src))
			if h, ok := n.(*ast.HTMLBlock); ok && h.HasClosure() {
				b.Write(h.ClosureLine.Value(src))
			}
		case *ast.Link:
			b.Write(n.Destination)
		case *ast.Image:
			b.Write(n.Destination)
		case *ast.AutoLink:
			b.Write(n.Label(src))
		case *ast.RawHTML:
			for i := 0; i < n.Segments.Len(); i++ {
				seg := n.Segments.At(i)
				b.Write(seg.Value(src))
			}
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// FuzzPlain checks that no input makes Plain panic or write invalid UTF-8,
// and that every marker character in its output was text in the input
// (escaped, in code or in a URL), never a marker it failed to remove.
func FuzzPlain(f *testing.F) {
	for _, p := range plainInputs(f) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(string(b))
		}
	}
	for _, s := range []string{"**a `b` c**", "> `x` [y](https://z)", "# *a*\n~~b~~", "- > ```\n  > x", "\\**x**",
		"| *a* |\n|---|\n| `b` |", "&#42;&#42;x&#42;&#42;", "\x00*\x00*", "\xff**x**", "<b>*x*</b>", "***"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		out := Plain(md)
		if !utf8.ValidString(out) {
			t.Fatalf("Plain(%q) is not valid UTF-8: %q", md, out)
		}
		lit := literalText(md)
		for _, c := range markerChars {
			if got, have := strings.Count(out, string(c)), strings.Count(lit, string(c)); got > have {
				t.Fatalf("Plain(%q) = %q: %d %q left, only %d were text", md, out, got, c, have)
			}
		}
	})
}

// TestPlainTablesKeepsTheRestAsWritten: only the table changes, into a
// code block of aligned columns; the Markdown around it is untouched.
func TestPlainTablesKeepsTheRestAsWritten(t *testing.T) {
	md := "# Prices\n\nSee **below**:\n| 名字 | n |\n|---|--:|\n| 苹果 | 1 |\n---\n\n- a | b\n"
	want := "# Prices\n\nSee **below**:\n```\n名字 | n\n---- | -\n苹果 | 1\n```\n\n---\n\n- a | b\n"
	if got := PlainTables(md); got != want {
		t.Errorf("PlainTables =\n%q\nwant\n%q", got, want)
	}
	if got := PlainTables("no tables, `a|b`"); got != "no tables, `a|b`" {
		t.Errorf("text without tables changed: %q", got)
	}
}

// FuzzPlainTables: no input makes PlainTables panic, lose its non-table
// text's validity, or leave a table at the top level.
func FuzzPlainTables(f *testing.F) {
	for _, s := range []string{"| a |\n|---|\n| b |", "x\n| a |\n|---|\n***", "| a |\n|---|", "> | a |\n> |---|"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		out := PlainTables(md)
		if !utf8.ValidString(out) {
			t.Fatalf("PlainTables(%q) is not valid UTF-8", md)
		}
		doc := parser().Parser().Parse(text.NewReader([]byte(out)))
		for c := doc.FirstChild(); c != nil; c = c.NextSibling() {
			if tb, ok := c.(*east.Table); ok && strings.TrimSpace(tableText(tb, []byte(out))) != "" && hasText(tb) {
				t.Fatalf("PlainTables(%q) = %q still has a table", md, out)
			}
		}
	})
}

// hasText reports whether n holds any text node.
func hasText(n ast.Node) bool {
	found := false
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if _, ok := c.(*ast.Text); ok && entering {
			found = true
			return ast.WalkStop, nil
		}
		return ast.WalkContinue, nil
	})
	return found
}
