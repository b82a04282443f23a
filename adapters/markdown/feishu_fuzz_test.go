package markdown_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/adapters/markdown"
	"github.com/shipmyagent/ship/internal/fakelark"
)

// FuzzFeishu checks that no input makes a card Feishu would refuse for its
// size, or lets Feishu's own tags take effect (a mention of everyone, a
// font, a text tag) as Feishu's rich text component reads them.
func FuzzFeishu(f *testing.F) {
	for _, dir := range []string{"testdata/*.md", "testdata/feishu/*.md"} {
		files, _ := filepath.Glob(dir)
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(string(b))
			}
		}
	}
	for _, s := range []string{"<at id=all></at>", "**<at id=all>**", "`<at id=all>`", "<font color=red>x</font>",
		"- <text_tag>x</text_tag>", "> <at user_id=\"all\">", "[<at id=all>](https://x)", "&lt;at id=all&gt;",
		"\\<at id=all>", "<<at id=all>>", "| <at id=all> |\n|---|\n| x |", "<!-- <at id=all> -->", "<div>\n<at id=all>\n</div>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		for _, part := range markdown.Feishu(md) {
			var b strings.Builder
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false) // as the adapter writes cards
			_ = enc.Encode(part)
			if n := b.Len() - 3; n > markdown.FeishuMaxContent { // quotes and newline
				t.Fatalf("Feishu(%q): a part of %d bytes as JSON", md, n)
			}
			if r := fakelark.RenderMarkdown(part); len(r.Mentions) > 0 || len(r.Tags) > 0 {
				t.Fatalf("Feishu(%q) = %q: Feishu reads tags %v, mentions %v", md, part, r.Tags, r.Mentions)
			}
		}
	})
}
