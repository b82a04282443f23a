package console

import (
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// allowed is every element the rendered Markdown may hold, with the
// attributes each may carry: formatting only.
var allowed = map[string][]string{
	"p": {"class"}, "br": nil, "hr": nil, "strong": nil, "em": nil, "del": nil, "code": {"class"}, "pre": nil,
	"a": {"href", "class", "target", "rel"}, "ul": nil, "ol": {"start"}, "li": nil, "blockquote": nil,
	"h1": nil, "h2": nil, "h3": nil, "h4": nil, "h5": nil, "h6": nil,
	"table": nil, "thead": nil, "tbody": nil, "tr": nil, "th": {"align"}, "td": {"align"},
}

// checkSafe fails t when out holds an element or attribute outside
// allowed, a link that is not absolute http(s) or mailto, or a link
// without rel="noopener noreferrer nofollow".
func checkSafe(t *testing.T, src string, out renderedHTML) {
	t.Helper()
	z := html.NewTokenizer(strings.NewReader(string(out)))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		tok := z.Token()
		attrs, ok := allowed[tok.Data]
		if !ok {
			t.Fatalf("Markdown %q rendered a <%s> element:\n%s", src, tok.Data, out)
		}
		for _, a := range tok.Attr {
			found := false
			for _, name := range attrs {
				found = found || a.Key == name
			}
			if !found {
				t.Fatalf("Markdown %q rendered <%s %s=%q>:\n%s", src, tok.Data, a.Key, a.Val, out)
			}
			switch {
			case a.Key == "href" && !(strings.HasPrefix(a.Val, "http://") || strings.HasPrefix(a.Val, "https://") || strings.HasPrefix(a.Val, "mailto:")):
				t.Fatalf("Markdown %q rendered a link to %q:\n%s", src, a.Val, out)
			case a.Key == "rel" && a.Val != "noopener noreferrer nofollow", a.Key == "target" && a.Val != "_blank":
				t.Fatalf("Markdown %q rendered %s=%q", src, a.Key, a.Val)
			}
		}
	}
}

// hostile is Markdown a model could be talked into writing (or copy from
// a web page) to run script in the console or load something remote.
var hostile = []string{
	"<script>alert(1)</script>",
	"hi <img src=x onerror=alert(1)> there",
	"<iframe src=\"https://evil.example\"></iframe>",
	"<a href=\"javascript:alert(1)\">x</a>",
	"[click](javascript:alert(1))",
	"[click](JaVaScRiPt:alert(1))",
	"[click](  javascript:alert(1))",
	"[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
	"[vb](vbscript:msgbox)",
	"[rel](/chats)",
	"[proto](//evil.example/x)",
	"![pixel](https://tracker.example/p.gif)",
	"![x](javascript:alert(1))",
	"<https://ok.example/a?b=\"c\"&d>",
	"<javascript:alert(1)>",
	"www.example.com/x\"onmouseover=alert(1)",
	"```\"><script>alert(1)</script>\n</code>\n```",
	"```js\" onclick=\"alert(1)\ncode\n```",
	"| a | <b onclick=x>b</b> |\n|:-|-:|\n| <svg onload=alert(1)> | `<i>` |",
	"<div style=\"position:fixed\">\n*overlay*\n</div>",
	"<!-- comment --><style>body{display:none}</style>",
	"[a](https://ok.example \"title\\\" onmouseover=alert(1)\")",
	"> quote <marquee>x</marquee>",
	"1. one\n2. <details open ontoggle=alert(1)>",
	"mail me: someone@example.com",
}

func TestMarkdownShowsHostileInputAsTextAndLinksOnlyToTheWeb(t *testing.T) {
	md := newMarkdown()
	for _, src := range hostile {
		checkSafe(t, src, md.render(src))
	}
	// Raw HTML is shown, escaped, not dropped: the reader sees what the
	// model wrote.
	for src, want := range map[string]string{
		"<script>alert(1)</script>":       "&lt;script&gt;alert(1)&lt;/script&gt;",
		"hi <img src=x onerror=alert(1)>": "hi &lt;img src=x onerror=alert(1)&gt;",
	} {
		if got := string(md.render(src)); !strings.Contains(got, want) {
			t.Errorf("%q rendered as %q, want it to show %q", src, got, want)
		}
	}
	// A link elsewhere than the web keeps its text, without the link.
	if got := string(md.render("[click](javascript:alert(1))")); got != "<p>click</p>\n" {
		t.Errorf("a javascript: link rendered as %q", got)
	}
	// A remote image is a link to it, never loaded.
	got := string(md.render("![a chart](https://cdn.example/c.png)"))
	if strings.Contains(got, "<img") || !strings.Contains(got, `href="https://cdn.example/c.png"`) || !strings.Contains(got, "a chart") {
		t.Errorf("a remote image rendered as %q", got)
	}
}

func TestMarkdownRendersWhatModelsWrite(t *testing.T) {
	md := newMarkdown()
	src := "**Done.** Here is *the* ~~old~~ plan:\n\n" +
		"1. build\n2. test\n   - nested with `go test`\n\n" +
		"```go\nfmt.Println(\"<&>\")\n```\n\n" +
		"| tool | ok |\n|:-----|---:|\n| go | yes |\n\n" +
		"> careful\n\nSee [the docs](https://go.dev/doc/ \"Go\") or https://example.com.\n" +
		"Line one\nline two"
	got := string(md.render(src))
	checkSafe(t, src, renderedHTML(got))
	for _, want := range []string{
		"<strong>Done.</strong>", "<em>the</em>", "<del>old</del>",
		"<ol>", "<li>build</li>", "<ul>", "<code>go test</code>",
		`<pre><code class="language-go">fmt.Println(&quot;&lt;&amp;&gt;&quot;)`,
		"<table>", `<th align="left">tool</th>`, `<td align="right">yes</td>`,
		"<blockquote>",
		`<a href="https://go.dev/doc/" target="_blank" rel="noopener noreferrer nofollow">the docs</a>`,
		`<a href="https://example.com" target="_blank" rel="noopener noreferrer nofollow">https://example.com</a>`,
		"Line one<br>", // a chat reply's line break is meant
	} {
		if !strings.Contains(got, want) {
			t.Errorf("rendered Markdown lacks %s:\n%s", want, got)
		}
	}
	if strings.Contains(got, "style=") {
		t.Errorf("rendered Markdown has an inline style (the CSP blocks them):\n%s", got)
	}
}

func FuzzMarkdownRendersOnlyFormatting(f *testing.F) {
	for _, s := range hostile {
		f.Add(s)
	}
	f.Add("**a** _b_ `c` [d](https://e.example) | f |\n|---|\n| g |")
	md := newMarkdown()
	f.Fuzz(func(t *testing.T, src string) {
		checkSafe(t, src, md.render(src))
	})
}
