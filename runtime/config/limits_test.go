package config

import (
	"errors"
	"strings"
	"testing"
)

func TestTokenLimits(t *testing.T) {
	cfg, err := Load(t.TempDir(), envOf(nil))
	if err != nil || cfg.Limits.Tokens.Budget().On() {
		t.Fatalf("no limits section: %+v, %v; want no budget", cfg.Limits, err)
	}
	dir := t.TempDir()
	write(t, dir, FileName, `{"limits": {"tokens": {"perUserPerDay": 200000, "perChatPerDay": 1000000, "exemptRoles": ["admin"]}}}`)
	cfg, err = Load(dir, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	b := cfg.Limits.Tokens.Budget()
	if b.PerUserPerDay != 200000 || b.PerChatPerDay != 1000000 || !b.Exempt([]string{"admin"}) {
		t.Errorf("budget = %+v", b)
	}
	write(t, dir, FileName, `{"limits": {"tokens": {"perUserPerDay": -1}}}`)
	if _, err := Load(dir, envOf(nil)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "limits.tokens.perUserPerDay") {
		t.Errorf("a negative budget: %v", err)
	}
}
