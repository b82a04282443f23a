package markdown

import (
	"strings"
	"unicode"

	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// QuoteMark starts every line of a quote in Plain's output.
const QuoteMark = "│ "

// Plain renders md as clean plain text, for platforms that show messages
// as typed (QQ): the Markdown markers are gone and what they meant is kept
// by layout. Headings are lines of their own, lists get "• " or "1. "
// markers indented by nesting, code blocks keep their lines verbatim (the
// language dropped) set apart by blank lines, inline code is kept as
// written, links read "text (url)" (just the text when it is the url),
// images "alt (url)", tables become aligned columns (wide characters
// counted as two) and quote lines start with "│ ". The result is valid
// UTF-8 with no white space at either end or at line ends.
func Plain(md string) string {
	src := []byte(strings.ToValidUTF8(md, "\uFFFD"))
	doc := parser().Parser().Parse(text.NewReader(src))
	p := &plainRenderer{src: src}
	p.blocks(doc)
	return p.finish()
}

// plainRenderer accumulates the text of one Plain call.
type plainRenderer struct {
	src    []byte
	out    strings.Builder
	prefix string // written after every line break: quote marks and list indentation
}

func (p *plainRenderer) write(s string) { p.out.WriteString(s) }

// newline starts a new line under the current quote and list.
func (p *plainRenderer) newline() { p.out.WriteString("\n" + p.prefix) }

// writeLines writes s line by line, each line under the current prefix.
func (p *plainRenderer) writeLines(s string) {
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			p.newline()
		}
		p.write(line)
	}
}

// blocks renders the block children of n, a blank line between two (a
// line break between the blocks of a tight list's item).
func (p *plainRenderer) blocks(n ast.Node) {
	tight := false
	if li, ok := n.(*ast.ListItem); ok {
		if l, ok := li.Parent().(*ast.List); ok {
			tight = l.IsTight
		}
	}
	first := true
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if _, ok := c.(*ast.LinkReferenceDefinition); ok {
			continue
		}
		if !first {
			p.newline()
			if !tight {
				p.newline()
			}
		}
		first = false
		p.block(c)
	}
}

// block renders one block node.
func (p *plainRenderer) block(n ast.Node) {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock, *ast.Heading:
		p.inlines(n)
	case *ast.ThematicBreak:
		p.write("──────────")
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		p.codeBlock(n)
	case *ast.HTMLBlock:
		body := blockLines(n, p.src)
		if n.HasClosure() {
			body += string(n.ClosureLine.Value(p.src))
		}
		p.writeLines(strings.TrimRight(body, "\n"))
	case *ast.Blockquote:
		outer := p.prefix
		p.write(QuoteMark)
		p.prefix = outer + QuoteMark
		p.blocks(n)
		p.prefix = outer
	case *ast.List:
		p.list(n)
	case *east.Table:
		p.writeLines(tableText(n, p.src))
	default:
		p.blocks(n)
	}
}

// codeBlock writes a code block's lines as they are. Blocks around it are
// a blank line away already, which sets it apart; inside a tight list item
// a line break is, so a blank line is added before and after there.
func (p *plainRenderer) codeBlock(n ast.Node) {
	body := strings.TrimRight(blockLines(n, p.src), "\n")
	if strings.TrimSpace(body) == "" {
		return
	}
	inItem := false
	if li, ok := n.Parent().(*ast.ListItem); ok {
		l, ok := li.Parent().(*ast.List)
		inItem = ok && l.IsTight
	}
	if inItem && n.PreviousSibling() != nil {
		p.newline()
	}
	p.writeLines(body)
	if inItem && n.NextSibling() != nil {
		p.newline()
	}
}

// blockLines joins the source lines of a block.
func blockLines(n ast.Node, src []byte) string {
	var b strings.Builder
	segs := n.Lines()
	for i := 0; i < segs.Len(); i++ {
		seg := segs.At(i)
		b.Write(seg.Value(src))
	}
	return b.String()
}

// list writes each item on its own line with a marker, its later lines
// indented under the item's first character.
func (p *plainRenderer) list(l *ast.List) {
	markers := listMarkers(l)
	outer := p.prefix
	i := 0
	for c := l.FirstChild(); c != nil; c, i = c.NextSibling(), i+1 {
		if i > 0 {
			p.newline()
			if !l.IsTight {
				p.newline()
			}
		}
		marker := markers[i]
		p.write(marker)
		p.prefix = outer + strings.Repeat(" ", len([]rune(marker)))
		p.blocks(c)
		p.prefix = outer
	}
}

// inlines renders the inline children of n.
func (p *plainRenderer) inlines(n ast.Node) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		p.inline(c)
	}
}

// inline renders one inline node: formatting is dropped, its text kept.
func (p *plainRenderer) inline(n ast.Node) {
	switch n := n.(type) {
	case *ast.Text:
		p.write(textValue(n, p.src))
		if n.SoftLineBreak() || n.HardLineBreak() {
			p.newline()
		}
	case *ast.String:
		p.write(string(n.Value))
	case *ast.CodeSpan:
		p.write(codeSpanText(n, p.src))
	case *ast.Link:
		dest := string(n.Destination)
		label := plainText(n, p.src)
		switch {
		case isBlank(label):
			p.write(dest)
		case dest == "" || sameLink(label, dest):
			p.inlines(n)
		default:
			p.inlines(n)
			p.write(" (" + dest + ")")
		}
	case *ast.Image:
		alt := strings.TrimSpace(plainText(n, p.src))
		if alt != "" {
			alt += " "
		}
		p.write(alt + "(" + string(n.Destination) + ")")
	case *ast.AutoLink:
		p.write(string(n.Label(p.src)))
	case *ast.RawHTML:
		for i := 0; i < n.Segments.Len(); i++ {
			seg := n.Segments.At(i)
			p.writeLines(string(seg.Value(p.src)))
		}
	default: // emphasis, strikethrough: their text only
		p.inlines(n)
	}
}

// textValue is a text node's text with backslash escapes and character
// references resolved.
func textValue(n *ast.Text, src []byte) string {
	v := n.Value(src)
	if !n.IsRaw() {
		v = util.ResolveEntityNames(util.ResolveNumericReferences(util.UnescapePunctuations(v)))
	}
	return strings.ReplaceAll(string(v), "\x00", "\uFFFD")
}

// sameLink reports whether a link's text already is its URL, so writing
// the URL again would say it twice.
func sameLink(label, dest string) bool {
	return label == dest || "mailto:"+label == dest || strings.TrimSuffix(dest, "/") == strings.TrimSuffix(label, "/")
}

// tableText is a GFM table as aligned columns, a dashed line under the
// header.
func tableText(t *east.Table, src []byte) string {
	var rows [][]string
	header := -1
	for row := t.FirstChild(); row != nil; row = row.NextSibling() {
		var cells []string
		for c := row.FirstChild(); c != nil; c = c.NextSibling() {
			cells = append(cells, strings.TrimSpace(plainText(c, src)))
		}
		if _, ok := row.(*east.TableHeader); ok {
			header = len(rows)
		}
		rows = append(rows, cells)
	}
	cols := len(t.Alignments)
	for _, row := range rows {
		cols = max(cols, len(row))
	}
	widths := make([]int, cols)
	for _, row := range rows {
		for i, c := range row {
			widths[i] = max(widths[i], Width(c))
		}
	}
	var b strings.Builder
	for n, row := range rows {
		if n > 0 {
			b.WriteByte('\n')
		}
		writeRow(&b, row, widths, t.Alignments)
		if n == header {
			b.WriteByte('\n')
			sep := make([]string, cols)
			for i, w := range widths {
				sep[i] = strings.Repeat("-", w)
			}
			writeRow(&b, sep, widths, nil)
		}
	}
	return b.String()
}

// finish drops white space at line ends and at both ends of the text.
func (p *plainRenderer) finish() string {
	lines := strings.Split(p.out.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRightFunc(l, unicode.IsSpace)
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}
