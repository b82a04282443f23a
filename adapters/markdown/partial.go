package markdown

import (
	"strings"

	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

// TelegramPartial renders Markdown that is still being written, for a
// preview of a streamed reply: spans the model has opened in the last
// paragraph but not closed yet ("**bold so f", "`cod") are closed, and a
// delimiter run at the very end is left out, so a reader sees formatting
// grow instead of raw markers that turn into formatting a moment later.
// A link being typed ("[the docs](https://exa") shows its text alone until
// its URL is complete, and a table whose header is being written shows as
// the monospace block it will become. An unclosed code fence needs
// nothing: CommonMark runs it to the end. Complete Markdown renders
// exactly as Telegram renders it.
func TelegramPartial(md string) (string, []Entity) {
	md = strings.TrimRight(strings.ToValidUTF8(md, "\uFFFD"), " \t\r\n")
	return Telegram(closeOpenSpans(finishTable(dropPartialLink(md))))
}

// lastBlock parses md and returns its source and last leaf block.
func lastBlock(md string) ([]byte, ast.Node) {
	src := []byte(md)
	doc := parser().Parser().Parse(text.NewReader(src))
	var last ast.Node
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering && n.Type() == ast.TypeBlock {
			last = n
		}
		return ast.WalkContinue, nil
	})
	return src, last
}

// dropPartialLink replaces a link (or image) still being typed at the end
// of md, "[label](partial-url" or "[label" with no "]" yet, by its label,
// so the preview shows the words and not the brackets and half a URL. A
// "[" inside code is left alone.
func dropPartialLink(md string) string {
	src, last := lastBlock(md)
	switch last.(type) {
	case *ast.Paragraph, *ast.TextBlock, *ast.Heading:
	default:
		return md
	}
	// The "[" must be in text goldmark left unparsed (not code, not a link
	// already complete).
	var segs []text.Segment
	_ = ast.Walk(last, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		switch n := n.(type) {
		case *ast.CodeSpan:
			return ast.WalkSkipChildren, nil
		case *ast.Text:
			if entering && !n.IsRaw() {
				segs = append(segs, n.Segment)
			}
		}
		return ast.WalkContinue, nil
	})
	inText := func(i int) bool {
		for _, sg := range segs {
			if i >= sg.Start && i < sg.Stop {
				return true
			}
		}
		return false
	}
	for i := len(src) - 1; i >= 0; i-- {
		if src[i] == '\n' {
			break // a link's label and URL stay on one line here
		}
		if src[i] != '[' || (i > 0 && src[i-1] == '\\') || !inText(i) {
			continue
		}
		if lines := last.Lines(); lines.Len() > 0 && strings.Count(md[lines.At(0).Start:i], "`")%2 == 1 {
			return md // inside a code span still open: it is code, shown as typed
		}
		label, rest, closed := strings.Cut(md[i+1:], "]")
		switch {
		case strings.ContainsAny(label, "[]"):
			return md
		case !closed:
		case rest == "":
		case strings.HasPrefix(rest, "(") && !strings.Contains(rest, ")"):
		default:
			return md
		}
		start := i
		if start > 0 && md[start-1] == '!' {
			start--
		}
		return strings.TrimRight(md[:start]+label, " \t")
	}
	return md
}

// finishTable completes the delimiter row of a table whose header row is
// the last line of md, or whose delimiter row is being typed, so that the
// preview shows the table as the aligned monospace block the finished
// reply has instead of raw pipes.
func finishTable(md string) string {
	src, last := lastBlock(md)
	p, ok := last.(*ast.Paragraph)
	if !ok {
		return md
	}
	lines := p.Lines()
	n := lines.Len()
	line := func(i int) string {
		sg := lines.At(i)
		return strings.TrimSpace(string(sg.Value(src)))
	}
	header, delim := n-1, false
	if n >= 2 && strings.HasPrefix(line(n-2), "|") && partialDelimiter(line(n-1)) {
		header, delim = n-2, true
	}
	h := line(header)
	if !strings.HasPrefix(h, "|") || (!delim && partialDelimiter(h)) {
		return md
	}
	cells := strings.Count(strings.ReplaceAll(strings.Trim(h, "|"), "\\|", ""), "|") + 1
	row := "|" + strings.Repeat("---|", cells)
	if delim {
		return md[:lines.At(n-1).Start] + row
	}
	return md + "\n" + row
}

// partialDelimiter reports whether s could be the start of a table's
// delimiter row ("|--", "| :-- | -").
func partialDelimiter(s string) bool {
	return strings.Trim(s, "|-: \t") == "" && strings.Contains(s, "-")
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
	case *ast.FencedCodeBlock:
		return dropFenceBeingTyped(md)
	case *east.Table, *east.TableRow, *east.TableHeader, *east.TableCell:
		return closeLastCell(md)
	default:
		return md // indented code, HTML: nothing to close
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

// dropFenceBeingTyped leaves out a last line of fence characters ("“")
// of a code block: a closing fence half typed would show as code for a
// moment. Leaving out a complete closing fence changes nothing either:
// CommonMark runs an unclosed block to the end.
func dropFenceBeingTyped(md string) string {
	i := strings.LastIndexByte(md, '\n')
	line := strings.TrimSpace(md[i+1:])
	if line == "" || i < 0 || strings.Trim(line, "`") != "" && strings.Trim(line, "~") != "" {
		return md
	}
	return strings.TrimRight(md[:i], " \t\r\n")
}

// closeLastCell closes the spans open in the table cell being typed (the
// text after the last "|" of the last row, which has no closing "|" yet).
// Emphasis never spans cells, so a finished cell is left as it is.
func closeLastCell(md string) string {
	line := md[strings.LastIndexByte(md, '\n')+1:]
	if strings.HasSuffix(line, "|") {
		return md
	}
	cut := len(md) - len(line)
	for i := len(line) - 1; i >= 0; i-- {
		if line[i] == '|' && (i == 0 || line[i-1] != '\\') {
			cut += i + 1
			break
		}
	}
	cell := strings.TrimLeft(md[cut:], " \t")
	if cell == "" {
		return md
	}
	return md[:len(md)-len(cell)] + closeOpenSpans(cell)
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
