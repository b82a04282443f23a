package main

import (
	"strings"
	"testing"
)

// A service's text reaches the terminal without control sequences and on
// one line.
func TestDoctorLinesArePrintable(t *testing.T) {
	got := printable("bad\x1b]0;owned\x07 token\nnext line\r\x00")
	if strings.ContainsAny(got, "\x1b\x07\n\r\x00") || !strings.Contains(got, "bad ]0;owned  token next line") {
		t.Errorf("printable = %q", got)
	}
	if long := printable(strings.Repeat("é", 1000)); len([]rune(long)) != maxDetail+1 || !strings.HasSuffix(long, "…") {
		t.Errorf("a long detail is %d runes", len([]rune(long)))
	}
}

func TestRedactorHidesEverySecret(t *testing.T) {
	r := newRedactor([]string{"s3cr3t-token", "", "ab"})
	if got := r.text(`Post "https://api/bots3cr3t-token/getMe": refused ab`); got != `Post "https://api/bot[redacted]/getMe": refused ab` {
		t.Errorf("redacted = %q", got)
	}
}

func TestDoctorLineFormat(t *testing.T) {
	for r, want := range map[checkResult]string{
		pass("state", "writable"):              "✓ state: writable",
		warn("disk", "low", "free space"):      "! disk: low — fix: free space",
		fail("qq", "refused", "copy it again"): "✗ qq: refused — fix: copy it again",
	} {
		if got := r.line(); got != want {
			t.Errorf("line = %q, want %q", got, want)
		}
	}
}
