package markdown

import (
	"strconv"
	"strings"

	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Feishu's card Markdown is the content of the rich text ("markdown")
// component of a card in JSON 2.0, which takes CommonMark with GFM tables
// and strikethrough, code blocks with a language, headings and quotes
// (https://open.feishu.cn/document/feishu-cards/card-json-v2-components/content-components/rich-text,
// "Supported Markdown syntax") plus tags of Feishu's own: <at id=all></at>
// mentions everyone, <font color=…>, <text_tag>, <link>, <number_tag> and
// more. The model's text must never speak those tags, so the renderer
// writes Markdown of its own from the syntax tree: what the model meant as
// formatting becomes Feishu's formatting, and every other character that
// Feishu would read as syntax is written as an HTML character reference
// ("&lt;", "&#42;"). JSON 2.0's rich text reads standard Markdown and
// HTML syntax (https://open.feishu.cn/document/feishu-cards/card-json-v2-breaking-changes-release-notes,
// "supports HTML syntax and standard Markdown syntax"), where a character
// reference is shown as its character and opens nothing (CommonMark,
// "Entity and numeric character references").

// FeishuMaxContent is the most bytes one card's Markdown takes once
// encoded as a JSON string. Feishu refuses a card over 30 KB
// (https://open.feishu.cn/document/feishu-cards/card-json-v2-structure,
// "card JSON size"); the card around the Markdown takes well under 2 KB.
const FeishuMaxContent = 28_000

// feishuMaxTables is how many tables one markdown component shows: the
// rich text page allows at most four per component ("表格 … 单组件 ≤ 4").
const feishuMaxTables = 4

// Feishu renders md as the Markdown of one or more cards, each within
// FeishuMaxContent and feishuMaxTables, cut between blocks (a block too
// big for one card is cut between lines; a code block cut so keeps its
// fence and language in each card). An empty md gives no parts.
func Feishu(md string) []string {
	src := []byte(strings.ToValidUTF8(md, "\uFFFD"))
	doc := parser().Parser().Parse(text.NewReader(src))
	f := &feishuRenderer{src: src}
	var blocks []fblock
	for c := doc.FirstChild(); c != nil; c = c.NextSibling() {
		if s := f.block(c); strings.TrimSpace(s) != "" {
			_, isTable := c.(*east.Table)
			_, isCode := c.(*ast.FencedCodeBlock)
			_, isIndented := c.(*ast.CodeBlock)
			blocks = append(blocks, fblock{s, isTable, isCode || isIndented})
		}
	}
	return packFeishu(blocks)
}

// FeishuPartial renders Markdown that is still being written (a streamed
// reply): spans opened in the last paragraph and not closed yet are
// closed, as TelegramPartial does, so no raw markers flicker.
func FeishuPartial(md string) []string { return Feishu(closeOpenSpans(md)) }

// fblock is one top-level block rendered.
type fblock struct {
	md    string
	table bool
	code  bool
}

// feishuRenderer writes card Markdown for the nodes of one document.
type feishuRenderer struct {
	src    []byte
	inCell bool // inside a table cell: "|" in code spans is escaped
}

// block renders one block node, without a trailing newline.
func (f *feishuRenderer) block(n ast.Node) string {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		return f.inlines(n)
	case *ast.Heading:
		return strings.Repeat("#", n.Level) + " " + f.inlines(n)
	case *ast.ThematicBreak:
		return "---"
	case *ast.FencedCodeBlock:
		lang := ""
		if n.Info != nil {
			lang, _, _ = strings.Cut(strings.TrimSpace(string(n.Info.Segment.Value(f.src))), " ")
		}
		return fence(f.lines(n), safeLanguage(lang))
	case *ast.CodeBlock:
		return fence(f.lines(n), "")
	case *ast.HTMLBlock:
		// Raw HTML is shown as written, never read as Feishu's tags.
		return escapeLines(strings.TrimRight(f.lines(n)+f.closure(n), "\n"))
	case *ast.Blockquote:
		return prefixLines(f.children(n, "\n\n"), "> ", "> ")
	case *ast.List:
		return f.list(n)
	case *east.Table:
		return f.table(n)
	}
	return f.children(n, "\n\n")
}

// children renders the child blocks of n, joined by sep.
func (f *feishuRenderer) children(n ast.Node, sep string) string {
	var parts []string
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if s := f.block(c); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, sep)
}

func (f *feishuRenderer) lines(n ast.Node) string {
	var b strings.Builder
	segs := n.Lines()
	for i := 0; i < segs.Len(); i++ {
		seg := segs.At(i)
		b.Write(seg.Value(f.src))
	}
	return b.String()
}

func (f *feishuRenderer) closure(n *ast.HTMLBlock) string {
	if !n.HasClosure() {
		return ""
	}
	return string(n.ClosureLine.Value(f.src))
}

// list renders a list: "- " or "N. " markers, nested content indented by
// four spaces, as the rich text page shows nesting.
func (f *feishuRenderer) list(l *ast.List) string {
	sep := "\n"
	if !l.IsTight {
		sep = "\n\n"
	}
	var items []string
	n := l.Start
	for c := l.FirstChild(); c != nil; c = c.NextSibling() {
		marker := "- "
		if l.IsOrdered() {
			marker = strconv.Itoa(n) + ". "
			n++
		}
		body := f.children(c, sep)
		if body == "" {
			body = "&#8203;" // an empty item stays an item
		}
		items = append(items, prefixLines(body, marker, "    "))
	}
	return strings.Join(items, sep)
}

// table renders a GFM table, cells escaped so "|" stays in its cell.
func (f *feishuRenderer) table(t *east.Table) string {
	var b strings.Builder
	f.inCell = true
	defer func() { f.inCell = false }()
	row := func(r ast.Node) {
		b.WriteString("|")
		for c := r.FirstChild(); c != nil; c = c.NextSibling() {
			cell := strings.ReplaceAll(f.inlines(c), "\n", " ")
			b.WriteString(" " + cell + " |")
		}
		b.WriteString("\n")
	}
	for r := t.FirstChild(); r != nil; r = r.NextSibling() {
		row(r)
		if _, ok := r.(*east.TableHeader); ok {
			b.WriteString("|")
			for _, a := range t.Alignments {
				switch a {
				case east.AlignLeft:
					b.WriteString(" :--- |")
				case east.AlignRight:
					b.WriteString(" ---: |")
				case east.AlignCenter:
					b.WriteString(" :---: |")
				default:
					b.WriteString(" --- |")
				}
			}
			b.WriteString("\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// inlines renders the inline content of n.
func (f *feishuRenderer) inlines(n ast.Node) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		f.inline(&b, c)
	}
	return strings.TrimRight(b.String(), " \n")
}

func (f *feishuRenderer) inline(b *strings.Builder, n ast.Node) {
	switch n := n.(type) {
	case *ast.Text:
		v := string(n.Value(f.src))
		if !n.IsRaw() {
			v = string(util.ResolveEntityNames(util.ResolveNumericReferences(util.UnescapePunctuations([]byte(v)))))
		}
		b.WriteString(escapeFeishu(v, atLineStart(b)))
		if n.SoftLineBreak() || n.HardLineBreak() {
			b.WriteString("\n")
		}
	case *ast.String:
		b.WriteString(escapeFeishu(string(n.Value), atLineStart(b)))
	case *ast.CodeSpan:
		b.WriteString(codeSpan(codeSpanText(n, f.src), f.inCell))
	case *ast.Emphasis:
		mark := strings.Repeat("*", n.Level)
		b.WriteString(wrapSpan(mark, f.inlines(n)))
	case *east.Strikethrough:
		b.WriteString(wrapSpan("~~", f.inlines(n)))
	case *ast.Link:
		f.link(b, string(n.Destination), f.inlines(n), plainText(n, f.src))
	case *ast.AutoLink:
		u := string(n.URL(f.src))
		if n.AutoLinkType == ast.AutoLinkURL {
			f.link(b, u, escapeFeishu(string(n.Label(f.src)), false), string(n.Label(f.src)))
		} else {
			b.WriteString(escapeFeishu(string(n.Label(f.src)), false))
		}
	case *ast.Image:
		// Feishu shows only uploaded images (img_key): the alt text links
		// to the picture instead.
		alt := plainText(n, f.src)
		if alt == "" {
			alt = "image"
		}
		f.link(b, string(n.Destination), escapeFeishu(alt, false), alt)
	case *ast.RawHTML:
		var raw strings.Builder
		for i := 0; i < n.Segments.Len(); i++ {
			seg := n.Segments.At(i)
			raw.Write(seg.Value(f.src))
		}
		b.WriteString(escapeFeishu(raw.String(), false))
	default:
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			f.inline(b, c)
		}
	}
}

// link writes a Markdown link to an http(s) URL; other URLs (Feishu's
// links must be http or https, rich text page) show the label and the URL
// as text.
func (f *feishuRenderer) link(b *strings.Builder, dest, label, plainLabel string) {
	if strings.TrimSpace(plainLabel) == "" {
		label = escapeFeishu(dest, false)
	}
	if !linkURL(dest) || strings.HasPrefix(strings.ToLower(dest), "tg:") {
		b.WriteString(label)
		if dest != "" && dest != plainLabel {
			b.WriteString(" (" + escapeFeishu(dest, false) + ")")
		}
		return
	}
	b.WriteString("[" + label + "](" + linkDest(dest) + ")")
}

// linkDest percent-encodes what would end a link destination early or
// open a tag: parentheses, angle brackets, spaces, quotes.
func linkDest(u string) string {
	r := strings.NewReplacer("(", "%28", ")", "%29", "<", "%3C", ">", "%3E", " ", "%20", `"`, "%22", "\\", "%5C")
	return r.Replace(u)
}

// wrapSpan wraps s in mark; an empty span is dropped. White space at the
// edges moves outside the markers, where CommonMark wants it.
func wrapSpan(mark, s string) string {
	if strings.TrimSpace(s) == "" {
		return s
	}
	lead := s[:len(s)-len(strings.TrimLeft(s, " "))]
	trail := s[len(strings.TrimRight(s, " ")):]
	return lead + mark + strings.TrimSpace(s) + mark + trail
}

// codeSpan writes s as inline code, with a fence longer than any run of
// backticks in it (CommonMark). In a table cell "|" is escaped, as GFM
// requires even inside code.
func codeSpan(s string, inCell bool) string {
	if inCell {
		s = strings.ReplaceAll(s, "|", `\|`)
	}
	fenceLen := longestRun(s, '`') + 1
	tick := strings.Repeat("`", fenceLen)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || (strings.HasPrefix(s, " ") && strings.HasSuffix(s, " ") && strings.TrimSpace(s) != "") {
		s = " " + s + " "
	}
	return tick + s + tick
}

// fence writes a code block with a fence longer than any backtick run in
// body, so no line of the code can close it.
func fence(body, lang string) string {
	body = strings.TrimRight(body, "\n")
	tick := strings.Repeat("`", max(3, longestRun(body, '`')+1))
	return tick + lang + "\n" + body + "\n" + tick
}

func longestRun(s string, c byte) int {
	best, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}

// atLineStart reports whether the next character written starts a line.
func atLineStart(b *strings.Builder) bool {
	s := b.String()
	return s == "" || strings.HasSuffix(s, "\n")
}

// feishuEntities are the characters Feishu's card Markdown reads as syntax
// (Markdown's own, and "<" that opens its tags), written as character
// references, which show them as they are.
var feishuEntities = map[rune]string{
	'&': "&amp;", '<': "&lt;", '>': "&gt;",
	'*': "&#42;", '_': "&#95;", '~': "&#126;", '`': "&#96;",
	'[': "&#91;", ']': "&#93;", '\\': "&#92;", '|': "&#124;", '#': "&#35;",
}

// escapeFeishu writes s so that Feishu shows it as it is. At a line start
// the characters that would open a list, a quote or a heading are escaped
// too.
func escapeFeishu(s string, lineStart bool) string {
	var b strings.Builder
	for i, c := range s {
		if e, ok := feishuEntities[c]; ok {
			b.WriteString(e)
			continue
		}
		start := lineStart && (i == 0 || s[i-1] == '\n')
		switch {
		case start && (c == '-' || c == '+' || c == '='):
			b.WriteString("&#" + strconv.Itoa(int(c)) + ";")
			continue
		case (c == '.' || c == ')') && (i+1 == len(s) || s[i+1] == ' ') && orderedMarker(s[:i], lineStart):
			b.WriteString("&#" + strconv.Itoa(int(c)) + ";")
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// orderedMarker reports whether before (the text before a "." or ")") is a
// line start followed by digits only: "1." would start an ordered list.
func orderedMarker(before string, lineStart bool) bool {
	line := before
	if i := strings.LastIndexByte(before, '\n'); i >= 0 {
		line = before[i+1:]
	} else if !lineStart {
		return false
	}
	if line == "" || len(line) > 9 {
		return false
	}
	for i := 0; i < len(line); i++ {
		if line[i] < '0' || line[i] > '9' {
			return false
		}
	}
	return true
}

// escapeLines escapes text shown as it is, line by line.
func escapeLines(s string) string { return escapeFeishu(s, true) }

// prefixLines puts first before the first line of s and rest before the
// others (blank lines get the prefix trimmed of spaces).
func prefixLines(s, first, rest string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		p := rest
		if i == 0 {
			p = first
		}
		if l == "" {
			p = strings.TrimRight(p, " ")
		}
		lines[i] = p + l
	}
	return strings.Join(lines, "\n")
}
