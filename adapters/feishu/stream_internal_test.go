package feishu

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/adapters/markdown"
)

// Replies are cut by markdown.Feishu on the promise that each part's card
// fits Feishu's 30 KB on the card JSON whatever the characters: the
// costliest are escaped as entities and again in the card JSON.
func TestWorstCaseCardFitsFeishusLimit(t *testing.T) {
	for name, ch := range map[string]string{
		"control": "\x01", "quote": `"`, "backslash": `\`,
		"angle": "<", "emoji": "😀", "cjk": "字", "ascii": "a",
	} {
		text := strings.Repeat(strings.Repeat(ch, 300)+"\n", 300)
		parts := markdown.Feishu(text)
		if len(parts) == 0 {
			t.Fatalf("%s: nothing rendered", name)
		}
		for _, p := range parts {
			content, err := cardContent(p)
			if err != nil {
				t.Fatal(err)
			}
			if len(content) > maxCardBytes {
				t.Errorf("%s: a card takes %d bytes, over %d", name, len(content), maxCardBytes)
			}
			var back struct {
				Schema string `json:"schema"`
				Body   struct {
					Elements []cardMarkdown `json:"elements"`
				} `json:"body"`
			}
			if err := json.Unmarshal([]byte(content), &back); err != nil || back.Schema != "2.0" || back.Body.Elements[0].Content != p {
				t.Errorf("%s: the card does not carry the Markdown back: %v", name, err)
			}
		}
	}
}
