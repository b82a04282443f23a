package markdown

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFeishuGolden renders every testdata/*.md (real model answers) and
// testdata/feishu/*.md (hostile input) into Feishu card Markdown and
// compares with testdata/feishu/*.golden; run with -update to regenerate,
// then review the diff.
func TestFeishuGolden(t *testing.T) {
	a, _ := filepath.Glob("testdata/*.md")
	b, _ := filepath.Glob("testdata/feishu/*.md")
	files := append(a, b...)
	if len(files) < 2 {
		t.Fatal("no testdata")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			md, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			parts := Feishu(string(md))
			for i, p := range parts {
				if n := len(jsonString(p)) - 2; n > FeishuMaxContent {
					t.Errorf("part %d is %d bytes as JSON, over %d", i+1, n, FeishuMaxContent)
				}
			}
			got := strings.Join(parts, "\n\n=====8<===== next card =====8<=====\n\n") + "\n"
			path := filepath.Join("testdata", "feishu", strings.TrimSuffix(filepath.Base(f), ".md")+".golden")
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

// Feishu's own tags in the model's text come out as entities: no "<" is
// left that could open <at>, <font> or <text_tag>, outside code.
func TestFeishuNeverSpeaksFeishuTags(t *testing.T) {
	for _, md := range []string{
		`<at user_id="all"></at>`,
		`hi <at id=all></at>`,
		"<font color=red>x</font>",
		"<text_tag color='red'>x</text_tag>",
		"**<at id=all></at>**",
		"> <at id=all></at>",
		"- <at id=all></at>",
		"| a |\n|---|\n| <at id=all></at> |",
		"[<at id=all></at>](https://x.example)",
		"<div>\n<at id=all></at>\n</div>",
	} {
		for _, p := range Feishu(md) {
			if strings.Contains(p, "<") {
				t.Errorf("%q rendered as %q: a raw '<' reaches Feishu", md, p)
			}
		}
	}
}

func TestFeishuFormatting(t *testing.T) {
	cases := []struct{ md, want string }{
		{"**bold** *it* ~~gone~~ `co*de`", "**bold** *it* ~~gone~~ `co*de`"},
		{"# Title", "# Title"},
		{"a_b_c and 2 * 3 * 4", "a&#95;b&#95;c and 2 &#42; 3 &#42; 4"},
		{"[docs](https://en.wikipedia.org/wiki/Go_(language))", "[docs](https://en.wikipedia.org/wiki/Go_%28language%29)"},
		{"- a\n  - b\n- c", "- a\n    - b\n- c"},
		{"1. one\n2. two", "1. one\n2. two"},
		{"> quote\n> more", "> quote\n> more"},
		{"```go\nfmt.Println(\"<>&\")\n```", "```go\nfmt.Println(\"<>&\")\n```"},
		{"x <b>y</b>", "x &lt;b&gt;y&lt;/b&gt;"},
	}
	for _, c := range cases {
		got := Feishu(c.md)
		if len(got) != 1 || got[0] != c.want {
			t.Errorf("Feishu(%q) = %q, want %q", c.md, got, c.want)
		}
	}
}

// A 10k-character answer in CJK (3 bytes each) splits between
// paragraphs, every card within the limit, nothing lost.
func TestFeishuLongSplitsAtBlocks(t *testing.T) {
	para := strings.Repeat("飞书消息卡片的大小有限制。", 40) // 520 characters
	var paras []string
	for range 20 {
		paras = append(paras, para)
	}
	md := strings.Join(paras, "\n\n")
	parts := Feishu(md)
	if len(parts) < 2 {
		t.Fatalf("%d parts for %d bytes", len(parts), len(md))
	}
	for i, p := range parts {
		if n := len(jsonString(p)) - 2; n > FeishuMaxContent {
			t.Errorf("part %d: %d bytes", i+1, n)
		}
		for _, q := range strings.Split(p, "\n\n") {
			if q != para {
				t.Fatalf("part %d cut a paragraph: %q…", i+1, q[:30])
			}
		}
	}
	if got := strings.Join(parts, "\n\n"); got != md {
		t.Error("the parts do not add up to the answer")
	}
}

// A code block bigger than a card is cut between lines, each piece a
// complete block with its language.
func TestFeishuHugeCodeBlockKeepsFence(t *testing.T) {
	md := "```python\n" + strings.Repeat("print('a line of code here')\n", 2000) + "```"
	parts := Feishu(md)
	if len(parts) < 2 {
		t.Fatalf("%d parts", len(parts))
	}
	for i, p := range parts {
		if !strings.HasPrefix(p, "```python\n") || !strings.HasSuffix(p, "\n```") {
			t.Errorf("part %d is not a whole code block: %q … %q", i+1, p[:20], p[len(p)-20:])
		}
		if n := len(jsonString(p)) - 2; n > FeishuMaxContent {
			t.Errorf("part %d: %d bytes", i+1, n)
		}
	}
}

// A streamed preview closes what the model has opened so far.
func TestFeishuPartialClosesSpans(t *testing.T) {
	for md, want := range map[string]string{
		"some **bold te": "some **bold te**",
		"a `cod":         "a `cod`",
		"end with **":    "end with",
	} {
		if got := FeishuPartial(md); len(got) != 1 || got[0] != want {
			t.Errorf("FeishuPartial(%q) = %q, want %q", md, got, want)
		}
	}
}

func TestJSONLenMatchesEncoder(t *testing.T) {
	for _, s := range []string{"plain", "q\"b\\s\n\t", "<>&", "中文😀", "\x01\u2028"} {
		if got, want := jsonLen(s), len(jsonString(s))-2; got != want {
			t.Errorf("jsonLen(%q) = %d, encoder writes %d", s, got, want)
		}
	}
}
