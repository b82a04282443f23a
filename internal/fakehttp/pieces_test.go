package fakehttp

import (
	"encoding/json"
	"strings"
	"testing"
)

// maxFragment is what both model fakes pass to Fragments.
const maxFragment = 4096

func TestSplitting(t *testing.T) {
	t.Parallel()
	for _, text := range []string{"", "one", "echo: hello world", "  lead\n\nnew line ü€ end ", strings.Repeat("x", 1000)} {
		pieces := SplitWords(text, 256)
		if strings.Join(pieces, "") != text {
			t.Errorf("SplitWords(%q) = %q", text, pieces)
		}
		for _, p := range pieces {
			if p == "" || len(p) > 256 {
				t.Errorf("SplitWords(%q): bad piece %q", text, p)
			}
		}
	}
	if got := SplitWords("echo: hello world", 256); len(got) != 3 {
		t.Errorf("splitWords by words = %q", got)
	}
	for _, args := range []string{"{}", `{"text":"ü€ü€"}`, `{"q":"` + strings.Repeat("y", 20000) + `"}`} {
		frags := Fragments(args, maxFragment)
		if strings.Join(frags, "") != args || len(frags) < 2 || (len(args) < 100 && len(frags) > 3) {
			t.Errorf("Fragments(%q) = %q", args, frags)
		}
		for _, f := range frags {
			if f == "" || !json.Valid([]byte(`"`+strings.ReplaceAll(f, `"`, `\"`)+`"`)) || len(f) > maxFragment+3 {
				t.Errorf("Fragments(%q): bad fragment %q", args, f)
			}
		}
	}
}
