package fakelark

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Rendered is what a message shows a reader, as Feishu draws it: the text
// without markup, and what the markup made of it. Tests assert on this
// instead of on the card JSON.
type Rendered struct {
	Text string // what a reader reads, formatting gone, blocks on lines of their own
	// Mentions are the ids Feishu would notify: "all" for <at id=all>.
	Mentions []string
	// Tags are Feishu's own tags that took effect (font, text_tag, link…).
	Tags       []string
	Bold       []string
	Italic     []string
	Strike     []string
	InlineCode []string
	CodeBlocks []CodeBlock
	Links      []Link
	Headings   []string
	ListItems  []string
	Quotes     []string
	// Tables counts the rows of each table, header included.
	Tables  []int
	Buttons []Button // a card's buttons, in order
}

// CodeBlock is a code block as shown: its language and code.
type CodeBlock struct{ Lang, Code string }

// Link is a link as shown.
type Link struct{ Text, URL string }

// Button is a card button: its label and the value its press sends back.
type Button struct {
	Text  string
	Value map[string]any
}

// feishuTags are the tags the card rich text component reads besides
// Markdown (https://open.feishu.cn/document/feishu-cards/card-json-v2-components/content-components/rich-text,
// "Supported Markdown syntax"): a model's text that reaches Feishu with
// one of them unescaped mentions people or restyles the card.
var feishuTags = map[string]bool{
	"at": true, "font": true, "text_tag": true, "link": true, "number_tag": true,
	"local_datetime": true, "person": true, "br": true, "hr": true, "a": true,
}

// tagRE reads an opening or closing tag's name and attributes.
var tagRE = regexp.MustCompile(`(?s)^<\s*(/?)\s*([A-Za-z_][A-Za-z0-9_]*)(.*?)/?>$`)

// atIDRE reads the id of an <at> tag: id=…, user_id=…, open_id=…
var atIDRE = regexp.MustCompile(`(?:^|\s)(?:id|user_id|open_id|email)\s*=\s*['"]?([^'"\s>]+)`)

// allTagsRE finds tags inside an HTML block, which Feishu's renderer reads
// as it reads inline tags.
var allTagsRE = regexp.MustCompile(`<\s*/?\s*[A-Za-z_][^<>]*>`)

// RenderMarkdown draws card Markdown (a markdown element's content) the way
// Feishu's JSON 2.0 rich text component does: CommonMark with GFM tables
// and strikethrough, HTML entities decoded, and Feishu's tags in effect.
func RenderMarkdown(md string) Rendered {
	var r Rendered
	src := []byte(md)
	doc := goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough)).Parser().Parse(text.NewReader(src))
	w := &drawer{src: src, r: &r}
	w.blocks(doc)
	r.Text = strings.TrimSpace(w.out.String())
	return r
}

type drawer struct {
	src []byte
	r   *Rendered
	out bytes.Buffer
}

func (w *drawer) blocks(n ast.Node) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		w.block(c)
	}
}

func (w *drawer) block(n ast.Node) {
	start := w.out.Len()
	switch n := n.(type) {
	case *ast.Heading:
		w.inlines(n)
		w.r.Headings = append(w.r.Headings, w.out.String()[start:])
	case *ast.FencedCodeBlock:
		lang := ""
		if n.Info != nil {
			lang, _, _ = strings.Cut(string(n.Info.Segment.Value(w.src)), " ")
		}
		code := w.lines(n)
		w.r.CodeBlocks = append(w.r.CodeBlocks, CodeBlock{lang, code})
		w.out.WriteString(code)
	case *ast.CodeBlock:
		code := w.lines(n)
		w.r.CodeBlocks = append(w.r.CodeBlocks, CodeBlock{"", code})
		w.out.WriteString(code)
	case *ast.HTMLBlock:
		raw := w.lines(n)
		if n.HasClosure() {
			raw += string(n.ClosureLine.Value(w.src))
		}
		for _, t := range allTagsRE.FindAllString(raw, -1) {
			w.tag(t)
		}
		w.out.WriteString(raw)
	case *ast.Blockquote:
		w.blocks(n)
		w.r.Quotes = append(w.r.Quotes, strings.TrimSpace(w.out.String()[start:]))
	case *ast.ListItem:
		w.blocks(n)
		w.r.ListItems = append(w.r.ListItems, strings.TrimSpace(w.out.String()[start:]))
	case *east.Table:
		rows := 0
		for row := n.FirstChild(); row != nil; row = row.NextSibling() {
			rows++
			var cells []string
			for c := row.FirstChild(); c != nil; c = c.NextSibling() {
				s := w.out.Len()
				w.inlines(c)
				cells = append(cells, w.out.String()[s:])
				w.out.Truncate(s)
			}
			w.out.WriteString(strings.Join(cells, " | ") + "\n")
		}
		w.r.Tables = append(w.r.Tables, rows)
	case *ast.Paragraph, *ast.TextBlock:
		w.inlines(n)
	case *ast.ThematicBreak:
	default:
		w.blocks(n)
	}
	if !strings.HasSuffix(w.out.String(), "\n") {
		w.out.WriteString("\n")
	}
}

func (w *drawer) lines(n ast.Node) string {
	var b strings.Builder
	for i := 0; i < n.Lines().Len(); i++ {
		seg := n.Lines().At(i)
		b.Write(seg.Value(w.src))
	}
	return b.String()
}

func (w *drawer) inlines(n ast.Node) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		w.inline(c)
	}
}

// span draws n's children and returns what they showed.
func (w *drawer) span(n ast.Node) string {
	start := w.out.Len()
	w.inlines(n)
	return w.out.String()[start:]
}

func (w *drawer) inline(n ast.Node) {
	switch n := n.(type) {
	case *ast.Text:
		v := n.Value(w.src)
		if !n.IsRaw() {
			v = util.ResolveEntityNames(util.ResolveNumericReferences(util.UnescapePunctuations(v)))
		}
		w.out.Write(v)
		if n.SoftLineBreak() || n.HardLineBreak() {
			w.out.WriteString("\n")
		}
	case *ast.String:
		w.out.Write(n.Value)
	case *ast.CodeSpan:
		s := w.span(n)
		w.r.InlineCode = append(w.r.InlineCode, s)
	case *ast.Emphasis:
		s := w.span(n)
		if n.Level >= 2 {
			w.r.Bold = append(w.r.Bold, s)
		} else {
			w.r.Italic = append(w.r.Italic, s)
		}
	case *east.Strikethrough:
		w.r.Strike = append(w.r.Strike, w.span(n))
	case *ast.Link:
		w.r.Links = append(w.r.Links, Link{w.span(n), string(n.Destination)})
	case *ast.AutoLink:
		label := string(n.Label(w.src))
		w.out.WriteString(label)
		w.r.Links = append(w.r.Links, Link{label, string(n.URL(w.src))})
	case *ast.RawHTML:
		var raw strings.Builder
		for i := 0; i < n.Segments.Len(); i++ {
			seg := n.Segments.At(i)
			raw.Write(seg.Value(w.src))
		}
		if !w.tag(raw.String()) {
			w.out.WriteString(raw.String())
		}
	default:
		w.inlines(n)
	}
}

// tag takes one raw tag: a Feishu tag takes effect (an <at> is a
// mention, shown as "@id") and reports true; any other is shown as text.
func (w *drawer) tag(raw string) bool {
	m := tagRE.FindStringSubmatch(raw)
	if m == nil || !feishuTags[strings.ToLower(m[2])] {
		return false
	}
	name := strings.ToLower(m[2])
	if m[1] == "/" {
		return true
	}
	if name == "at" {
		id := "?"
		if a := atIDRE.FindStringSubmatch(m[3]); a != nil {
			id = a[1]
		}
		w.r.Mentions = append(w.r.Mentions, id)
		w.out.WriteString("@" + id)
	}
	w.r.Tags = append(w.r.Tags, name)
	return true
}

// RenderCard draws a card's content (JSON 1.0 or 2.0): its text elements
// and markdown, one after another, and its buttons.
func RenderCard(content string) Rendered {
	var card struct {
		Elements []json.RawMessage `json:"elements"`
		Body     struct {
			Elements []json.RawMessage `json:"elements"`
		} `json:"body"`
	}
	var out Rendered
	if json.Unmarshal([]byte(content), &card) != nil {
		return out
	}
	var texts []string
	var walk func(raws []json.RawMessage)
	walk = func(raws []json.RawMessage) {
		for _, raw := range raws {
			var el cardElement
			if json.Unmarshal(raw, &el) != nil {
				continue
			}
			switch {
			case el.Tag == "markdown" || el.Tag == "lark_md":
				r := RenderMarkdown(el.Content)
				texts = append(texts, r.Text)
				out = merge(out, r)
			case el.Tag == "plain_text":
				texts = append(texts, el.Content)
			case el.Tag == "button":
				b := Button{Text: el.textContent()}
				for _, bh := range el.Behaviors {
					if bh.Type == "callback" {
						b.Value = bh.Value
					}
				}
				if b.Value == nil {
					b.Value = el.Value // JSON 1.0 buttons carry value themselves
				}
				out.Buttons = append(out.Buttons, b)
			case el.Text != nil:
				if el.Text.Tag == "lark_md" {
					r := RenderMarkdown(el.Text.Content)
					texts = append(texts, r.Text)
					out = merge(out, r)
				} else {
					texts = append(texts, el.Text.Content)
				}
			}
			walk(el.Actions)
			walk(el.Elements)
			for _, col := range el.Columns {
				walk(col.Elements)
			}
		}
	}
	walk(append(card.Elements, card.Body.Elements...))
	out.Text = strings.Join(texts, "\n")
	return out
}

// cardElement is what the fake reads of any card element.
type cardElement struct {
	Tag     string `json:"tag"`
	Content string `json:"content"`
	Text    *struct {
		Tag     string `json:"tag"`
		Content string `json:"content"`
	} `json:"text"`
	Behaviors []struct {
		Type  string         `json:"type"`
		Value map[string]any `json:"value"`
	} `json:"behaviors"`
	Value    map[string]any    `json:"value"`
	Actions  []json.RawMessage `json:"actions"`
	Elements []json.RawMessage `json:"elements"`
	Columns  []struct {
		Elements []json.RawMessage `json:"elements"`
	} `json:"columns"`
}

func (e cardElement) textContent() string {
	if e.Text == nil {
		return ""
	}
	return e.Text.Content
}

func merge(a, b Rendered) Rendered {
	a.Mentions = append(a.Mentions, b.Mentions...)
	a.Tags = append(a.Tags, b.Tags...)
	a.Bold = append(a.Bold, b.Bold...)
	a.Italic = append(a.Italic, b.Italic...)
	a.Strike = append(a.Strike, b.Strike...)
	a.InlineCode = append(a.InlineCode, b.InlineCode...)
	a.CodeBlocks = append(a.CodeBlocks, b.CodeBlocks...)
	a.Links = append(a.Links, b.Links...)
	a.Headings = append(a.Headings, b.Headings...)
	a.ListItems = append(a.ListItems, b.ListItems...)
	a.Quotes = append(a.Quotes, b.Quotes...)
	a.Tables = append(a.Tables, b.Tables...)
	return a
}

// String is a short description for test failures.
func (r Rendered) String() string {
	return fmt.Sprintf("%q (mentions %v, tags %v)", r.Text, r.Mentions, r.Tags)
}
