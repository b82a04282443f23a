package ingress_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/shipmyagent/ship/runtime/ingress"
)

func TestLimitText(t *testing.T) {
	note := func(n string) string { return "\n[… message cut at " + n + " characters]" }
	cases := []struct {
		name string
		text string
		max  int
		want string
		cut  bool
	}{
		{"empty", "", 5, "", false},
		{"shorter", "abc", 5, "abc", false},
		{"exactly max", "abcde", 5, "abcde", false},
		{"one over", "abcdef", 5, "abcde" + note("5"), true},
		{"multi-byte under max in characters, over in bytes", "中文中文中", 5, "中文中文中", false},
		{"multi-byte cut between characters", "中文中文中文", 5, "中文中文中" + note("5"), true},
		{"emoji (4-byte) cut between characters", strings.Repeat("👍", 4), 3, "👍👍👍" + note("3"), true},
		{"combining marks count as characters", "e\u0301e\u0301e\u0301", 3, "e\u0301e" + note("3"), true},
		{"invalid UTF-8 bytes count one each", "ab\xff\xfecd", 3, "ab\xff" + note("3"), true},
		{"newlines are characters", "a\nb\nc", 2, "a\n" + note("2"), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, cut := ingress.LimitText(c.text, c.max)
			if got != c.want || cut != c.cut {
				t.Errorf("LimitText(%q, %d) = %q, %v; want %q, %v", c.text, c.max, got, cut, c.want, c.cut)
			}
		})
	}
}

func TestLimitTextDefaultsToMaxMessageChars(t *testing.T) {
	if ingress.MaxMessageChars != 10_000 {
		t.Fatalf("MaxMessageChars = %d, want 10000 (the API's limit too)", ingress.MaxMessageChars)
	}
	exact := strings.Repeat("é", ingress.MaxMessageChars)
	for _, max := range []int{0, -1} {
		if got, cut := ingress.LimitText(exact, max); cut || got != exact {
			t.Errorf("max %d: a text of exactly %d characters was cut", max, ingress.MaxMessageChars)
		}
		got, cut := ingress.LimitText(exact+"é", max)
		if !cut || !strings.HasPrefix(got, exact) || !strings.HasSuffix(got, "[… message cut at 10000 characters]") {
			t.Errorf("max %d: a text one character over was not cut at the default: %q…", max, got[len(got)-60:])
		}
	}
}

func TestLimitTextKeepsValidUTF8Valid(t *testing.T) {
	text := strings.Repeat("a中👍\u0301", 100)
	for max := 1; max <= utf8.RuneCountInString(text)+1; max++ {
		got, cut := ingress.LimitText(text, max)
		if !utf8.ValidString(got) {
			t.Fatalf("max %d: result is not valid UTF-8: %q", max, got)
		}
		head, _, _ := strings.Cut(got, "\n[…")
		if cut && utf8.RuneCountInString(head) != max {
			t.Fatalf("max %d: kept %d characters", max, utf8.RuneCountInString(head))
		}
		if !strings.HasPrefix(text, head) {
			t.Fatalf("max %d: kept text is not a prefix of the original", max)
		}
	}
}

func BenchmarkLimitText(b *testing.B) {
	long := strings.Repeat("中文 text ", 5_000)
	b.ReportAllocs()
	for b.Loop() {
		ingress.LimitText(long, ingress.MaxMessageChars)
	}
}
