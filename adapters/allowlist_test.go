package adapters

import "testing"

func TestAllowlist(t *testing.T) {
	if everyone := NewAllowlist[string](nil); !everyone.Allows("oc_any") || !everyone.Allows("") {
		t.Error("an empty allowlist refuses someone")
	}
	l := NewAllowlist([]string{"oc_a", "ou_b"})
	if !l.Allows("oc_a") || !l.Allows("ou_b") || l.Allows("oc_c") || l.Allows("") {
		t.Error("a list allows other ids than its own, or refuses its own")
	}
}
