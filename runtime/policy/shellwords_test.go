package policy

import (
	"math/rand"
	"testing"
)

// TestGlobFromAndGlobDotdotAgreeWithPlainDefinitions checks the two
// one-pass matchers against their definitions, spelled out slowly, on
// many small random cases (a fixed seed: the same cases every run).
func TestGlobFromAndGlobDotdotAgreeWithPlainDefinitions(t *testing.T) {
	// from: glob from the first word or path-segment start where it matches.
	from := func(p, s string) (int, bool) {
		rs := []rune(s)
		for i := 0; i <= len(rs); i++ {
			if (i == 0 || rs[i-1] == ' ' || rs[i-1] == '/') && glob(p, string(rs[i:])) {
				return len(string(rs[:i])), true
			}
		}
		return 0, false
	}
	// noDotdot: glob whose wildcards never match dotdot, by recursion.
	var noDotdot func(p, s []rune) bool
	noDotdot = func(p, s []rune) bool {
		switch {
		case len(p) == 0:
			return len(s) == 0
		case p[0] == '*':
			return noDotdot(p[1:], s) || len(s) > 0 && s[0] != dotdot && noDotdot(p, s[1:])
		case len(s) == 0:
			return false
		case p[0] == '?' && s[0] != dotdot || p[0] == s[0]:
			return noDotdot(p[1:], s[1:])
		}
		return false
	}
	r := rand.New(rand.NewSource(25))
	random := func(max int, alphabet string) string {
		a := []rune(alphabet)
		b := make([]rune, r.Intn(max))
		for i := range b {
			b[i] = a[r.Intn(len(a))]
		}
		return string(b)
	}
	for range 50000 {
		p, s := random(7, "ab /*?"), random(10, "ab /")
		gotAt, got := globFrom(p, s)
		wantAt, want := from(p, s)
		if got != want || got && gotAt != wantAt {
			t.Fatalf("globFrom(%q, %q) = %d, %v; want %d, %v", p, s, gotAt, got, wantAt, want)
		}
		p, s = random(7, "a/*?\x00"), random(9, "a/\x00")
		if got, want := globDotdot(p, s), noDotdot([]rune(p), []rune(s)); got != want {
			t.Fatalf("globDotdot(%q, %q) = %v, want %v", p, s, got, want)
		}
	}
}
