package qq

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/shipmyagent/ship/adapters/split"
)

func TestFitPacksDenselyOnlyWhenRepliesAreShort(t *testing.T) {
	para := strings.Repeat("这一段很长。 lorem ipsum dolor sit amet ", 32) // ~1,100 runes
	text := strings.TrimSpace(strings.Repeat(para+"\n\n", 6))
	nice := split.Split(text, MaxMessageChars)
	if len(nice) != 6 {
		t.Fatalf("split gives %d parts, want 6", len(nice))
	}
	if got := fit(text, -1); len(got) != 6 {
		t.Errorf("no limit: %d parts, want split's 6", len(got))
	}
	if got := fit(text, 6); len(got) != 6 {
		t.Errorf("6 replies left: %d parts, want split's 6", len(got))
	}
	for _, left := range []int{5, 4} {
		got := fit(text, left)
		if len(got) > left {
			t.Errorf("%d replies left: %d parts", left, len(got))
		}
		for _, p := range got {
			if n := utf8.RuneCountInString(p); n > MaxMessageChars || strings.TrimSpace(p) != p {
				t.Errorf("part of %d runes, trimmed %v", n, strings.TrimSpace(p) == p)
			}
		}
		if strings.Join(strings.Fields(strings.Join(got, " ")), " ") != strings.Join(strings.Fields(text), " ") {
			t.Errorf("%d replies left: the parts lost text", left)
		}
	}
}

func TestPackTakesTheFewestPartsWithoutWordCuts(t *testing.T) {
	for _, text := range []string{
		strings.Repeat("字", 2*MaxMessageChars+1),
		strings.Repeat("a b ", MaxMessageChars),
		strings.Repeat("x", MaxMessageChars) + "\n\n\n" + strings.Repeat("y", MaxMessageChars),
	} {
		runes := utf8.RuneCountInString(text)
		got := pack(text, MaxMessageChars, false)
		if want := (runes + MaxMessageChars - 1) / MaxMessageChars; len(got) > want {
			t.Errorf("%d runes in %d parts, want at most %d", runes, len(got), want)
		}
		for _, p := range got {
			if utf8.RuneCountInString(p) > MaxMessageChars || !utf8.ValidString(p) || p == "" {
				t.Errorf("bad part of %d runes", utf8.RuneCountInString(p))
			}
		}
	}
	if got := pack("  \n ", MaxMessageChars, true); len(got) != 0 {
		t.Errorf("blank text packed into %q", got)
	}
}

func TestDefangMakesLinksReadableButNotClickable(t *testing.T) {
	for _, c := range []struct{ in, level1, level2 string }{
		{"Docs: https://example.com/guide or run 1.sh", "Docs: hxxps://example[.]com/guide or run 1[.]sh", "Docs: hxxps://example[.]com/guide or run 1[.]sh"},
		{"HTTP://Example.COM", "HXXP://Example[.]COM", "HXXP://Example[.]COM"},
		{"ftp://files.example.org/a.txt", "fxp://files[.]example[.]org/a[.]txt", "fxp://files[.]example[.]org/a[.]txt"},
		{"http://10.0.0.1/x", "hxxp://10.0.0.1/x", "hxxp://10[.]0[.]0[.]1/x"},
		{"crawler.py, v1.2 and pi 3.14. Done.", "crawler[.]py, v1.2 and pi 3.14. Done.", "crawler[.]py, v1[.]2 and pi 3[.]14. Done."},
		{"访问example.com获取", "访问example[.]com获取", "访问example[.]com获取"},
		{"no links here.", "no links here.", "no links here."},
	} {
		if got := defang(c.in, 1); got != c.level1 {
			t.Errorf("defang(%q, 1) = %q, want %q", c.in, got, c.level1)
		}
		if got := defang(c.in, 2); got != c.level2 {
			t.Errorf("defang(%q, 2) = %q, want %q", c.in, got, c.level2)
		}
	}
}
