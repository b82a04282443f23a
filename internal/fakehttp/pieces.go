package fakehttp

import (
	"context"
	"time"
	"unicode"
	"unicode/utf8"
)

// The model API fakes stream replies the way the real APIs do: text in
// word-sized pieces, tool arguments in a few fragments that may end inside
// a JSON string. Both fakes cut the same way.

// SplitWords cuts text into word-sized pieces (each piece starts with the
// whitespace before its word) of at most limit bytes; the pieces
// concatenate back to text.
func SplitWords(text string, limit int) []string {
	var out []string
	start := 0
	inSpace := false
	for i, r := range text {
		space := unicode.IsSpace(r)
		if i > start && ((space && !inSpace) || i-start+utf8.RuneLen(r) > limit) {
			out = append(out, text[start:i])
			start = i
		}
		inSpace = space
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

// Fragments cuts s into the fragments a stream carries: three for
// ordinary sizes (fewer for tiny strings), more when a fragment would
// exceed maxFragment bytes. Cuts fall on rune boundaries; no fragment is
// empty (langchaingo would take an empty fragment for a new tool call).
func Fragments(s string, maxFragment int) []string {
	parts := min(3, utf8.RuneCountInString(s))
	if parts < 1 {
		return nil
	}
	return SplitBytes(s, min((len(s)+parts-1)/parts, maxFragment))
}

// SplitBytes cuts s into pieces of about n bytes, on rune boundaries.
func SplitBytes(s string, n int) []string {
	n = max(n, 1)
	var out []string
	for len(s) > 0 {
		cut := min(n, len(s))
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return out
}

// RoughTokens estimates a token count: about four bytes per token, at
// least one for non-empty text.
func RoughTokens(s string) int {
	if s == "" {
		return 0
	}
	return (len(s) + 3) / 4
}

// Pause waits d before the next piece of a paced stream, or until ctx ends
// (the client went away); it reports whether d passed. Both fakes pace
// their streams with it.
func Pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
