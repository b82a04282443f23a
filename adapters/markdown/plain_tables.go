package markdown

import (
	"bytes"
	"strings"

	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

// PlainTables returns md with each GFM table at the top level replaced by
// a fenced code block of its aligned columns (as Plain writes them), and
// everything else as written: for a Markdown dialect without tables, such
// as QQ's markdown messages, whose documented syntax has headings,
// emphasis, links, images, lists, quotes and rules but no tables. Tables
// nested in lists or quotes are left alone.
func PlainTables(md string) string {
	src := []byte(strings.ToValidUTF8(md, "\uFFFD"))
	doc := parser().Parser().Parse(text.NewReader(src))
	var out bytes.Buffer
	done := 0 // src is copied up to here
	for c := doc.FirstChild(); c != nil; c = c.NextSibling() {
		t, ok := c.(*east.Table)
		if !ok {
			continue
		}
		first, last := sourceSpan(t)
		start, end := lineStart(src, first), lineEnd(src, last)
		if first > last || start < done {
			continue // not where it was expected: leave it as written
		}
		out.Write(src[done:start])
		body := tableText(t, src)
		fence := "```"
		for strings.Contains(body, fence) {
			fence += "`"
		}
		out.WriteString(fence + "\n" + body + "\n" + fence + "\n\n")
		done = end
	}
	out.Write(src[done:])
	return out.String()
}

// sourceSpan is the first and last source offsets of n's lines and text
// (first > last when it has none).
func sourceSpan(n ast.Node) (first, last int) {
	first, last = int(^uint(0)>>1), -1
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		if t, ok := c.(*ast.Text); ok {
			first, last = min(first, t.Segment.Start), max(last, t.Segment.Stop)
		} else if c.Type() == ast.TypeBlock {
			for i := 0; i < c.Lines().Len(); i++ {
				seg := c.Lines().At(i)
				first, last = min(first, seg.Start), max(last, seg.Stop)
			}
		}
		return ast.WalkContinue, nil
	})
	return first, last
}

// lineStart is the offset of the start of the line holding offset i.
func lineStart(src []byte, i int) int {
	i = min(max(i, 0), len(src))
	return bytes.LastIndexByte(src[:i], '\n') + 1
}

// lineEnd is the offset just past the end (the line break included) of
// the line holding offset i.
func lineEnd(src []byte, i int) int {
	i = min(max(i, 0), len(src))
	if j := bytes.IndexByte(src[i:], '\n'); j >= 0 {
		return i + j + 1
	}
	return len(src)
}
