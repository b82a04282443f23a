package feishu

import (
	"encoding/json"
	"strings"
	"testing"

	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"
)

// Cards are split at MaxMessageChars like text, on the promise that a card
// of that many characters fits Feishu's 30 KB whatever they are. The
// costliest characters are escaped twice, once in the card JSON and again
// in the request body the SDK marshals.
func TestWorstCaseCardFitsFeishusLimit(t *testing.T) {
	for name, ch := range map[string]string{
		"control": "\x01", "line separator": "\u2028", "quote": `"`, "backslash": `\`,
		"angle": "<", "emoji": "😀", "cjk": "字", "ascii": "a",
	} {
		text := strings.Repeat(ch, MaxMessageChars)
		content, err := cardContent(text)
		if err != nil {
			t.Fatal(err)
		}
		body, err := json.Marshal(larkim.PatchMessageReqBody{Content: &content})
		if err != nil {
			t.Fatal(err)
		}
		if len(body) > maxCardBytes {
			t.Errorf("%s: a card of %d characters takes %d bytes, over %d", name, MaxMessageChars, len(body), maxCardBytes)
		}
		var back cardJSON
		if err := json.Unmarshal([]byte(content), &back); err != nil || back.Elements[0].Text.Content != text || !back.Config.UpdateMulti {
			t.Errorf("%s: the card does not carry the text back: %v", name, err)
		}
	}
}
