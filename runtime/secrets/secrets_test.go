package secrets

import "testing"

func TestRedactHidesOverlappingAndRepeatedValuesWhole(t *testing.T) {
	s := New([]string{"sk-abcdef123", "abcdef123456", " sk-abcdef123\n", "short"})
	got := s.Redact("key=sk-abcdef123456 again sk-abcdef123; short stays")
	if want := "key=<redacted> again <redacted>; short stays"; got != want {
		t.Errorf("Redact = %q, want %q", got, want)
	}
	if !s.In("x sk-abcdef123 y") || s.In("nothing here") {
		t.Error("In is wrong")
	}
	if (&Set{}).Redact("sk-abcdef123") != "sk-abcdef123" {
		t.Error("the zero Set hid something")
	}
}
