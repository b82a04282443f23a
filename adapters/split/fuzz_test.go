package split

import (
	"slices"
	"strings"
	"testing"
)

func FuzzSplit(f *testing.F) {
	seeds := []string{
		"",
		"hello",
		paragraphs(3, 60),
		"intro\n\n```go\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n```\n\nafter the code " + strings.Repeat("word ", 8),
		"~~~\n" + strings.Repeat("tilde block line\n", 4) + "~~~",
		"```python\n" + strings.Repeat("print('unclosed')\n", 3),
		strings.Repeat("中文没有空格的长句子。", 8),
		strings.Repeat("👨‍👩‍👧‍👦👍🏽❤️", 5),
		strings.Repeat("e\u0301a\u0300", 30),
		strings.Repeat("line one\r\n\r\nline two\r\n", 3),
		strings.Repeat("\tcol\tcol\tcol\n", 6),
		strings.Repeat("`", 40),
		"```\n```\n```\n" + strings.Repeat("x", 45) + "\n```",
		strings.Repeat(" ", 45) + "x",
		strings.Repeat("a ``` b ~~~ ", 10),
		"   ```   \n" + strings.Repeat("y ", 20) + "\n````\n",
	}
	seeds = append(seeds, regressions...)
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, limit := range []int{32, 100, 4096} {
			parts := Split(text, limit)
			checkParts(t, text, limit, parts)
			if again := Split(text, limit); !slices.Equal(parts, again) {
				t.Fatalf("limit %d: not deterministic", limit)
			}
		}
	})
}
