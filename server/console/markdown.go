package console

import (
	"bytes"
	"net/url"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/util"
)

// Markdown is how the console shows what the model wrote: CommonMark with
// GFM tables, strikethrough and autolinks (goldmark, the parser the
// platforms' renderers use), turned into HTML that can hold nothing but
// formatting. The rules, each enforced by a renderer below rather than by
// cleaning up afterwards:
//
//   - raw HTML the model wrote (a block or inline) is shown as the text it
//     is, escaped: a "<script>" in a reply is visible, never run and never
//     silently dropped (goldmark's own safe mode would drop it);
//   - links go only to absolute http, https and mailto URLs, open in a new
//     tab without telling the target where they came from
//     (rel="noopener noreferrer nofollow"); any other link shows its text;
//   - images are never loaded: a remote image would tell its host the
//     reader's address the moment the page opens, so it is shown as a link
//     the reader may choose to follow;
//   - a fenced code block keeps its language as a class
//     ("language-go"), cut to characters a class name needs;
//   - table alignment is an align attribute: the console's CSP forbids
//     inline styles.
//
// The page's Content-Security-Policy (no inline script, no remote
// anything) stays the second wall behind these.

// renderedHTML is HTML the Markdown renderer produced: the one kind of
// non-constant markup the pages write (markup.rendered).
type renderedHTML string

// markdown is the console's Markdown renderer. It holds no state between
// calls: goldmark's parser and renderer are safe for concurrent use once
// built, which md does once per Console.
type markdown struct{ md goldmark.Markdown }

func newMarkdown() *markdown {
	return &markdown{md: goldmark.New(
		goldmark.WithExtensions(
			extension.Strikethrough, extension.Linkify,
			extension.NewTable(extension.WithTableCellAlignMethod(extension.TableCellAlignAttribute)),
		),
		goldmark.WithRendererOptions(
			html.WithHardWraps(), // a chat reply's line breaks are meant
			renderer.WithNodeRenderers(util.Prioritized(safeRenderer{}, 1)),
		),
	)}
}

// render turns the model's Markdown into safe HTML. Should goldmark ever
// fail, the text is shown escaped, as it was before the console rendered
// Markdown.
func (m *markdown) render(src string) renderedHTML {
	var b bytes.Buffer
	if err := m.md.Convert([]byte(src), &b); err != nil {
		var p bytes.Buffer
		p.WriteString("<p>")
		p.Write(util.EscapeHTML([]byte(src)))
		p.WriteString("</p>")
		return renderedHTML(p.String())
	}
	return renderedHTML(b.String())
}

// safeRenderer replaces goldmark's renderers of the nodes that could
// bring in anything but formatting: raw HTML, links, autolinks, images
// and fenced code (for its class).
type safeRenderer struct{}

// RegisterFuncs implements renderer.NodeRenderer.
func (safeRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindHTMLBlock, renderHTMLBlock)
	reg.Register(ast.KindRawHTML, renderRawHTML)
	reg.Register(ast.KindLink, renderLink)
	reg.Register(ast.KindAutoLink, renderAutoLink)
	reg.Register(ast.KindImage, renderImage)
	reg.Register(ast.KindFencedCodeBlock, renderFencedCode)
}

// renderHTMLBlock shows an HTML block as the text it is, keeping its
// lines.
func renderHTMLBlock(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.HTMLBlock)
	_, _ = w.WriteString(`<p class="md-raw">`)
	lines := n.Lines()
	var text bytes.Buffer
	for i := range lines.Len() {
		seg := lines.At(i)
		text.Write(seg.Value(src))
	}
	if n.HasClosure() {
		text.Write(n.ClosureLine.Value(src))
	}
	_, _ = w.Write(util.EscapeHTML(bytes.TrimRight(text.Bytes(), "\n")))
	_, _ = w.WriteString("</p>\n")
	return ast.WalkContinue, nil
}

// renderRawHTML shows an inline tag ("<img src=x onerror=…>") as text.
func renderRawHTML(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkSkipChildren, nil
	}
	n := node.(*ast.RawHTML)
	for i := range n.Segments.Len() {
		seg := n.Segments.At(i)
		_, _ = w.Write(util.EscapeHTML(seg.Value(src)))
	}
	return ast.WalkSkipChildren, nil
}

// linkRel is what every link the model wrote carries: a new tab that
// cannot reach back into the console (noopener), no Referer naming the
// chat page (noreferrer), and no endorsement (nofollow).
const linkRel = `" target="_blank" rel="noopener noreferrer nofollow">`

// safeURL returns dest when it is an absolute http, https or mailto URL,
// else "". A relative link would point into the console itself.
func safeURL(dest string) string {
	u, err := url.Parse(strings.TrimSpace(dest))
	if err != nil {
		return ""
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		if u.Host == "" {
			return ""
		}
	case "mailto":
	default:
		return ""
	}
	return dest
}

// openLink writes an <a> start tag for dest, or nothing (and false) when
// dest is not a link the console follows.
func openLink(w util.BufWriter, dest []byte, class string) bool {
	href := safeURL(string(dest))
	if href == "" {
		return false
	}
	_, _ = w.WriteString(`<a href="`)
	_, _ = w.Write(util.EscapeHTML(util.URLEscape([]byte(href), true)))
	if class != "" {
		_, _ = w.WriteString(`" class="`)
		_, _ = w.WriteString(class)
	}
	_, _ = w.WriteString(linkRel)
	return true
}

// renderLink writes a link the console follows; any other keeps its text
// (the children) without the link.
func renderLink(w util.BufWriter, _ []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.Link)
	switch {
	case entering:
		openLink(w, n.Destination, "")
	case safeURL(string(n.Destination)) != "":
		_, _ = w.WriteString("</a>")
	}
	return ast.WalkContinue, nil
}

// renderAutoLink writes <https://…>, a bare www.… or an e-mail address.
func renderAutoLink(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.AutoLink)
	dest := n.URL(src)
	if n.AutoLinkType == ast.AutoLinkEmail && !bytes.HasPrefix(bytes.ToLower(dest), []byte("mailto:")) {
		dest = append([]byte("mailto:"), dest...)
	}
	label := util.EscapeHTML(n.Label(src))
	if !openLink(w, dest, "") {
		_, _ = w.Write(label)
		return ast.WalkContinue, nil
	}
	_, _ = w.Write(label)
	_, _ = w.WriteString("</a>")
	return ast.WalkContinue, nil
}

// renderImage shows an image as a link to it, labelled with its alt
// text: never loaded, so opening the chat tells no remote host anything.
func renderImage(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.Image)
	alt := plainText(n, src)
	if alt == "" {
		alt = "image"
	}
	linked := openLink(w, n.Destination, "md-image")
	_, _ = w.WriteString("🖼 ")
	_, _ = w.Write(util.EscapeHTML([]byte(alt)))
	if linked {
		_, _ = w.WriteString("</a>")
	}
	return ast.WalkSkipChildren, nil
}

// plainText is the text of n's inline children (an image's alt text).
func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch t := c.(type) {
		case *ast.Text:
			b.Write(t.Segment.Value(src))
		case *ast.String:
			b.Write(t.Value)
		case *ast.CodeSpan:
			for cc := t.FirstChild(); cc != nil; cc = cc.NextSibling() {
				if tt, ok := cc.(*ast.Text); ok {
					b.Write(tt.Segment.Value(src))
				}
			}
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// renderFencedCode writes a code block; its language becomes the class
// "language-<lang>", cut to the characters a language name has.
func renderFencedCode(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.FencedCodeBlock)
	if !entering {
		_, _ = w.WriteString("</code></pre>\n")
		return ast.WalkContinue, nil
	}
	_, _ = w.WriteString("<pre><code")
	if lang := codeLanguage(n.Language(src)); lang != "" {
		_, _ = w.WriteString(` class="language-`)
		_, _ = w.WriteString(lang)
		_ = w.WriteByte('"')
	}
	_ = w.WriteByte('>')
	lines := n.Lines()
	for i := range lines.Len() {
		seg := lines.At(i)
		_, _ = w.Write(util.EscapeHTML(seg.Value(src)))
	}
	return ast.WalkContinue, nil
}

// codeLanguage keeps the letters, digits and +#.-_ of a fence's language
// ("c++", "objective-c", "c#"), at most 32.
func codeLanguage(lang []byte) string {
	var b strings.Builder
	for _, c := range lang {
		if b.Len() == 32 {
			break
		}
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.IndexByte("+#.-_", c) >= 0:
			b.WriteByte(c)
		}
	}
	return b.String()
}
