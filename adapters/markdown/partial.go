package markdown

import (
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// TelegramPartial renders Markdown that is still being written, for a
// preview of a streamed reply: spans the model has opened in the last
// paragraph but not closed yet ("**bold so f", "`cod") are closed, and a
// delimiter run at the very end is left out, so a reader sees formatting
// grow instead of raw markers that turn into formatting a moment later.
// An unclosed code fence needs nothing: CommonMark runs it to the end.
// Complete Markdown renders exactly as Telegram renders it.
func TelegramPartial(md string) (string, []Entity) {
	return Telegram(closeOpenSpans(md))
}

// closeOpenSpans appends closers for the delimiter runs left unmatched in
// the last paragraph of md. Unmatched delimiters are the ones goldmark
// leaves in text nodes: matched ones became emphasis, strikethrough or
// code span nodes.
func closeOpenSpans(md string) string {
	md = strings.TrimRight(strings.ToValidUTF8(md, "\uFFFD"), " \t\r\n")
	src := []byte(md)
	doc := parser().Parser().Parse(text.NewReader(src))
	var last ast.Node
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering && n.Type() == ast.TypeBlock {
			last = n
		}
		return ast.WalkContinue, nil
	})
	switch last.(type) {
	case *ast.Paragraph, *ast.TextBlock, *ast.Heading:
	default:
		return md // code, tables, HTML: nothing to close
	}
	var texts []*ast.Text
	_ = ast.Walk(last, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		switch n := n.(type) {
		case *ast.CodeSpan:
			return ast.WalkSkipChildren, nil
		case *ast.Text:
			if entering && !n.IsRaw() {
				texts = append(texts, n)
			}
		}
		return ast.WalkContinue, nil
	})
	var openers []string
	for _, t := range texts {
		seg := t.Segment
		if len(texts) > 0 && t == texts[len(texts)-1] && seg.Stop == len(src) {
			// A run at the very end opens nothing yet: leave it out.
			end := seg.Stop
			for end > seg.Start && isDelimiter(src[end-1]) {
				end--
			}
			if end > seg.Start && src[end-1] == '\\' {
				end++ // keep an escaped delimiter
			}
			if end < seg.Stop && end > 0 {
				md = strings.TrimRight(md[:end], " \t")
				src = src[:len(md)]
				seg.Stop = min(end, len(src))
			}
		}
		for i := seg.Start; i < seg.Stop; {
			c := src[i]
			if !isDelimiter(c) || (i > 0 && src[i-1] == '\\') {
				i++
				continue
			}
			j := i
			for j < seg.Stop && src[j] == c {
				j++
			}
			run := string(src[i:j])
			opens := j < len(src) && src[j] != ' ' && src[j] != '\t' && src[j] != '\n'
			if c == '_' && i > 0 && src[i-1] != ' ' && src[i-1] != '\n' {
				opens = false // snake_case: intra-word underscores emphasise nothing
			}
			if opens {
				openers = append(openers, run)
				if c == '`' {
					return md + closers(openers) // the rest is code
				}
			}
			i = j
		}
	}
	return md + closers(openers)
}

// closers closes openers, innermost first.
func closers(openers []string) string {
	var b strings.Builder
	for i := len(openers) - 1; i >= 0; i-- {
		b.WriteString(openers[i])
	}
	return b.String()
}

// isDelimiter reports whether c can open an inline span.
func isDelimiter(c byte) bool { return c == '*' || c == '_' || c == '~' || c == '`' }
