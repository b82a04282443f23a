package chat

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
)

func TestSearch(t *testing.T) {
	s := openTestStore(t, StoreOptions{SegmentBytes: 512})
	all := []string{
		"Hello World", "nothing here", "Ünïcode Straße", "你好世界", `she said "hi"`,
		"see a/b", "<tag>&amp;", "line1\nline2", "HELLO again", "tab\there", "the \u212Aelvin scale",
	}
	for _, text := range all {
		mustAppend(t, s, userEntry(topicKey, text))
	}
	tests := []struct {
		keyword string
		limit   int
		want    []string
	}{
		{"hello", 10, []string{"HELLO again", "Hello World"}},
		{"HeLLo", 1, []string{"HELLO again"}},
		{"üNÏcode", 10, []string{"Ünïcode Straße"}},
		{"STRASSE", 10, nil},
		{"世界", 10, []string{"你好世界"}},
		{`"hi"`, 10, []string{`she said "hi"`}},
		{"a/b", 10, []string{"see a/b"}},
		{"<TAG>&", 10, []string{"<tag>&amp;"}},
		{"1\nline", 10, []string{"line1\nline2"}},
		{"\t", 10, []string{"tab\there"}},
		{"kelvin", 10, []string{"the \u212Aelvin scale"}},
		{"absent", 10, nil},
		{"e", 3, []string{"the \u212Aelvin scale", "tab\there", "HELLO again"}},
	}
	for _, tt := range tests {
		got, err := s.Search(context.Background(), topicKey, tt.keyword, tt.limit)
		if err != nil {
			t.Fatalf("Search(%q): %v", tt.keyword, err)
		}
		if !slices.Equal(texts(got), tt.want) && !(len(got) == 0 && tt.want == nil) {
			t.Errorf("Search(%q, %d) = %q, want %q", tt.keyword, tt.limit, texts(got), tt.want)
		}
	}
}

// TestSearchSeesEscapedLines covers lines from other JSON writers, which may
// spell any character as \uXXXX, or '/' as "\/".
func TestSearchSeesEscapedLines(t *testing.T) {
	dir := t.TempDir()
	lines := []string{
		`{"v":1,"ts":1,"chatKey":"api:chat:x","role":"user","text":"\u0048ELLO there"}`,
		`{"v":1,"ts":2,"chatKey":"api:chat:x","role":"user","text":"path a\/b"}`,
		`{"v":1,"ts":3,"chatKey":"api:chat:x","role":"user","text":"\u0130stanbul"}`,
		`{"v":1,"ts":4,"chatKey":"api:chat:x","role":"user","text":"plain"}`,
	}
	data := strings.Join(lines, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "api_chat_x.jsonl"), []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	s := openTestStore(t, StoreOptions{Dir: dir})
	for keyword, want := range map[string]string{"hello": "HELLO there", "A/B": "path a/b", "istanbul": "İstanbul"} {
		got, err := s.Search(context.Background(), "api:chat:x", keyword, 10)
		if err != nil || len(got) != 1 || got[0].Text != want {
			t.Errorf("Search(%q) = %q, %v; want [%q]", keyword, texts(got), err, want)
		}
	}
}

// TestLowerCaseToASCII guards matcher.mayMatch: it assumes these are the
// only non-ASCII runes that strings.ToLower turns into ASCII.
func TestLowerCaseToASCII(t *testing.T) {
	var got []rune
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		if lower := []rune(strings.ToLower(string(r))); slices.ContainsFunc(lower, func(l rune) bool { return l < 0x80 }) {
			got = append(got, r)
		}
	}
	if want := []rune{0x130, 0x212A}; !slices.Equal(got, want) {
		t.Fatalf("runes lowering to ASCII = %U, want %U", got, want)
	}
}

func TestContainsFoldASCII(t *testing.T) {
	tests := []struct {
		s, lower string
		want     bool
	}{
		{"Hello", "hello", true},
		{"xxHELLOxx", "hello", true},
		{"hell", "hello", false},
		{"hHhHeLlO", "hello", true},
		{"a/B", "a/b", true},
		{"", "a", false},
		{"abc", "", true},
		{"123-456", "3-4", true},
		{"ÄBC", "abc", false},
	}
	for _, tt := range tests {
		if got := containsFoldASCII([]byte(tt.s), tt.lower); got != tt.want {
			t.Errorf("containsFoldASCII(%q, %q) = %v", tt.s, tt.lower, got)
		}
	}
}

// TestCaselessRunesLowerOnlyFromThemselves guards probeRune: a caseless
// non-ASCII rune in a lowered keyword must stand for itself in the text.
func TestCaselessRunesLowerOnlyFromThemselves(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if l := unicode.ToLower(r); l != r && l >= 0x80 && caseless(l) {
			t.Errorf("%U lowers to caseless %U", r, l)
		}
	}
}

func TestMatcherProbe(t *testing.T) {
	tests := []struct{ keyword, probe string }{
		{"Hello", "hello"},
		{"你好世界", "你好世界"},
		{"Ünïcode", "code"},
		{"ü", ""},
		{`say "hi" now`, "say "},
		{"a\nb", "a"},
		{"Straße 你好", "e 你好"},
	}
	for _, tt := range tests {
		if got := NewMatcher(tt.keyword).probe; got != tt.probe {
			t.Errorf("probe of %q = %q, want %q", tt.keyword, got, tt.probe)
		}
	}
}
