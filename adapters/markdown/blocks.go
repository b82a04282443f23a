package markdown

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/util"
)

// blocks renders the block children of n, a blank line between two blocks
// (a line break between the paragraphs of a tight list item).
func (r *renderer) blocks(n ast.Node) {
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
			if tight {
				r.newline()
			} else {
				r.write("\n")
				r.newline()
			}
		}
		first = false
		r.block(c)
	}
}

// block renders one block node.
func (r *renderer) block(n ast.Node) {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		r.inlines(n)
	case *ast.Heading:
		r.style(Bold, n)
	case *ast.ThematicBreak:
		r.write("──────────")
	case *ast.FencedCodeBlock:
		r.codeBlock(n, string(n.Language(r.src)))
	case *ast.CodeBlock:
		r.codeBlock(n, "")
	case *ast.HTMLBlock:
		r.write(strings.TrimRight(r.lines(n)+r.closure(n), "\n"))
	case *ast.Blockquote:
		r.blockquote(n)
	case *ast.List:
		r.list(n)
	case *east.Table:
		r.table(n)
	default:
		r.blocks(n)
	}
}

// closure is the closing line of an HTML block, kept apart by goldmark.
func (r *renderer) closure(n *ast.HTMLBlock) string {
	if !n.HasClosure() {
		return ""
	}
	return string(n.ClosureLine.Value(r.src))
}

// lines joins the source lines of a block.
func (r *renderer) lines(n ast.Node) string {
	var b strings.Builder
	segs := n.Lines()
	for i := 0; i < segs.Len(); i++ {
		seg := segs.At(i)
		b.Write(seg.Value(r.src))
	}
	return b.String()
}

// codeBlock writes a code block as a pre entity with its language. Only
// the first word of the info string names the language, as in CommonMark.
func (r *renderer) codeBlock(n ast.Node, lang string) {
	body := strings.TrimRight(r.lines(n), "\n")
	if body == "" {
		body = " " // keeps the block visible; the entity is dropped
	}
	r.code(body, Entity{Type: Pre, Language: safeLanguage(lang)})
}

// safeLanguage keeps a language name Telegram accepts: no white space or
// control characters, at most 64 bytes (a longer info string is not a
// language name anyway).
func safeLanguage(lang string) string {
	if len(lang) > 64 || strings.ContainsFunc(lang, func(c rune) bool { return c <= ' ' || c == 0x7f }) {
		return ""
	}
	return lang
}

// blockquote writes a blockquote entity. Telegram does not nest
// blockquotes (https://core.telegram.org/bots/api#messageentity), so an
// inner quote adds no entity of its own.
func (r *renderer) blockquote(n *ast.Blockquote) {
	r.quote++
	defer func() { r.quote-- }()
	if r.quote > 1 {
		r.blocks(n)
		return
	}
	// Styles open around a quote cannot exist: quotes are blocks.
	start := r.pos
	r.blocks(n)
	r.add(Entity{Type: Blockquote}, start)
}

// bullet marks a list item by nesting depth.
func bullet(depth int) string {
	switch depth % 3 {
	case 1:
		return "◦ "
	case 2:
		return "▪ "
	}
	return "• "
}

// listMarkers are the markers of l's items, in order: "1. ", "2. ", …
// from the list's start, or a bullet that changes with the depth of
// nesting. Every renderer that writes lists as text uses them.
func listMarkers(l *ast.List) []string {
	depth := 0
	for p := l.Parent(); p != nil; p = p.Parent() {
		if _, ok := p.(*ast.List); ok {
			depth++
		}
	}
	var out []string
	num := l.Start
	for c := l.FirstChild(); c != nil; c = c.NextSibling() {
		if l.IsOrdered() {
			out = append(out, strconv.Itoa(num)+". ")
			num++
		} else {
			out = append(out, bullet(depth))
		}
	}
	return out
}

// list writes each item on its own line with a marker, its later lines
// indented under the item's first character.
func (r *renderer) list(l *ast.List) {
	markers := listMarkers(l)
	outer := r.indent
	i := 0
	for c := l.FirstChild(); c != nil; c, i = c.NextSibling(), i+1 {
		if i > 0 {
			if !l.IsTight {
				r.write("\n")
			}
			r.newline()
		}
		marker := markers[i]
		r.write(marker)
		r.indent = outer + strings.Repeat(" ", len([]rune(marker)))
		r.blocks(c)
		r.indent = outer
	}
}

// inlines renders the inline children of n.
func (r *renderer) inlines(n ast.Node) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		r.inline(c)
	}
}

// inline renders one inline node.
func (r *renderer) inline(n ast.Node) {
	switch n := n.(type) {
	case *ast.Text:
		r.text(n)
	case *ast.String:
		r.write(string(n.Value))
	case *ast.CodeSpan:
		r.code(codeSpanText(n, r.src), Entity{Type: Code})
	case *ast.Emphasis:
		if n.Level >= 2 {
			r.style(Bold, n)
		} else {
			r.style(Italic, n)
		}
	case *east.Strikethrough:
		r.style(Strikethrough, n)
	case *ast.Link:
		r.link(n)
	case *ast.Image:
		alt := plainText(n, r.src)
		if alt != "" {
			alt += " "
		}
		r.write(alt + "(" + string(n.Destination) + ")")
	case *ast.AutoLink:
		r.write(string(n.Label(r.src)))
	case *ast.RawHTML:
		for i := 0; i < n.Segments.Len(); i++ {
			seg := n.Segments.At(i)
			r.write(string(seg.Value(r.src)))
		}
	default:
		r.inlines(n)
	}
}

// text writes a text node with backslash escapes and character references
// resolved, and its line break.
func (r *renderer) text(n *ast.Text) {
	v := n.Value(r.src)
	if !n.IsRaw() {
		v = util.ResolveEntityNames(util.ResolveNumericReferences(util.UnescapePunctuations(v)))
	}
	r.write(strings.ReplaceAll(string(v), "\x00", "\uFFFD"))
	if n.SoftLineBreak() || n.HardLineBreak() {
		r.newline()
	}
}

// link writes a text_link entity when Telegram accepts the URL and the
// link has text; otherwise the text followed by the URL, so nothing the
// model wrote is lost. Inside a quote, where Telegram nests no text_link,
// links are written the same way.
func (r *renderer) link(n *ast.Link) {
	dest := string(n.Destination)
	label := plainText(n, r.src)
	switch {
	case isBlank(label):
		r.write(dest)
		return
	case r.quote > 0 || r.inLink || !linkURL(dest):
		r.inlines(n)
		if dest != "" && dest != label {
			r.write(" (" + dest + ")")
		}
		return
	}
	r.inLink = true
	start := r.pos
	r.inlines(n)
	r.inLink = false
	r.add(Entity{Type: TextLink, URL: dest}, start)
}

// linkURL reports whether Telegram takes u as a text_link URL: http(s) with
// a host, or tg:.
func linkURL(u string) bool {
	p, err := url.Parse(u)
	if err != nil || strings.ContainsFunc(u, func(c rune) bool { return c <= ' ' }) {
		return false
	}
	switch strings.ToLower(p.Scheme) {
	case "http", "https":
		return p.Host != ""
	case "tg":
		return p.Opaque != "" || p.Host != ""
	}
	return false
}

// codeSpanText is the content of a code span, line breaks as spaces
// (CommonMark).
func codeSpanText(n ast.Node, src []byte) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if t, ok := c.(*ast.Text); ok {
			v := string(t.Value(src))
			b.WriteString(strings.ReplaceAll(v, "\n", " "))
		} else if s, ok := c.(*ast.String); ok {
			b.WriteString(string(s.Value))
		}
	}
	return b.String()
}

// plainText is the text of n's inline content without formatting, links
// followed by their URL: for table cells and image alt text.
func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			v := c.Value(src)
			if !c.IsRaw() {
				v = util.ResolveEntityNames(util.ResolveNumericReferences(util.UnescapePunctuations(v)))
			}
			b.Write(v)
			if c.SoftLineBreak() || c.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(c.Value)
		case *ast.CodeSpan:
			b.WriteString(codeSpanText(c, src))
		case *ast.AutoLink:
			b.Write(c.Label(src))
		case *ast.RawHTML:
			for i := 0; i < c.Segments.Len(); i++ {
				seg := c.Segments.At(i)
				b.Write(seg.Value(src))
			}
		case *ast.Link:
			label := plainText(c, src)
			b.WriteString(label)
			if dest := string(c.Destination); dest != "" && dest != label {
				b.WriteString(" (" + dest + ")")
			}
		default:
			b.WriteString(plainText(c, src))
		}
	}
	return strings.ReplaceAll(b.String(), "\x00", "\uFFFD")
}
