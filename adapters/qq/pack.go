package qq

import (
	"strings"
	"unicode"

	"github.com/shipmyagent/ship/adapters/split"
)

// fit cuts text into the parts it is sent as. Normally that is
// split.Split's cut: between paragraphs and lines, so parts read well. When
// that takes more parts than the message has replies left (left ≥ 0), the
// text is packed densely instead: every part filled up to MaxMessageChars,
// cut at white space, and if that is still too many, cut between any two
// code points, which takes the fewest parts there can be. QQ shows text
// messages as plain text, so a cut through a Markdown block costs nothing
// but looks.
func fit(text string, left int) []string {
	parts := split.Split(text, MaxMessageChars)
	if left < 0 || len(parts) <= left {
		return parts
	}
	for _, wordCuts := range []bool{true, false} {
		if p := pack(text, MaxMessageChars, wordCuts); len(p) < len(parts) {
			parts = p
		}
		if len(parts) <= left {
			break
		}
	}
	return parts
}

// pack fills parts of at most limit runes from text, dropping the white
// space at each cut. With wordCuts it cuts at the last white space that
// leaves the part more than half full; otherwise (and when there is none)
// after exactly limit runes, so no text takes more than ceil(runes/limit)
// parts.
func pack(text string, limit int, wordCuts bool) []string {
	rs := []rune(text)
	skip := func(i int) int {
		for i < len(rs) && unicode.IsSpace(rs[i]) {
			i++
		}
		return i
	}
	var parts []string
	for start := skip(0); start < len(rs); {
		end := len(rs)
		if end-start > limit {
			end = start + limit
			if wordCuts {
				for i := end; i > start+limit/2; i-- {
					if unicode.IsSpace(rs[i]) {
						end = i
						break
					}
				}
			}
		}
		if part := strings.TrimRightFunc(string(rs[start:end]), unicode.IsSpace); part != "" {
			parts = append(parts, part)
		}
		start = skip(end)
	}
	return parts
}
