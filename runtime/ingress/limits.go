package ingress

import "strconv"

// MaxMessageChars is the default cap on one user message, in characters
// (Unicode code points): the same 10,000 the HTTP API accepts for
// instructions. Platforms can deliver longer texts (Feishu and QQ posts);
// the part beyond the cap is cut before the message is logged and queued.
const MaxMessageChars = 10_000

// LimitText cuts text to its first max characters (Unicode code points,
// never inside a UTF-8 sequence) and appends a note saying so, so the model
// knows it sees only part of the message. It reports whether it cut. A text
// of at most max characters comes back unchanged. max ≤ 0 means
// MaxMessageChars. Bytes that are not valid UTF-8 count one character each
// and are kept as they are.
func LimitText(text string, max int) (string, bool) {
	if max <= 0 {
		max = MaxMessageChars
	}
	if len(text) <= max { // a character is at least one byte
		return text, false
	}
	n := 0
	for i := range text { // i steps from one code point (or bad byte) to the next
		if n == max {
			return text[:i] + cutNote(max), true
		}
		n++
	}
	return text, false
}

// cutNote is what LimitText appends to a text it cut at max characters.
func cutNote(max int) string {
	return "\n[… message cut at " + strconv.Itoa(max) + " characters]"
}
