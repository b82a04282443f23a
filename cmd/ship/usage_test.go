package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shipmyagent/ship/runtime/usage"
)

func TestShipUsagePrintsTheDaysTable(t *testing.T) {
	dir := t.TempDir()
	day := func() time.Time { return time.Date(2026, 11, 26, 9, 30, 0, 0, time.UTC) }
	tally, err := usage.Open(filepath.Join(dir, ".ship", "usage"), day)
	if err != nil {
		t.Fatal(err)
	}
	for _, turn := range []struct {
		chat, who string
		c         usage.Counts
	}{
		{"telegram:chat:1", "telegram:1", usage.Counts{Input: 1200, CachedInput: 1000, Output: 80}},
		{"telegram:chat:1", "telegram:2", usage.Counts{Input: 900, Output: 20}},
		{"api:chat:x", "api:token", usage.Counts{Input: 300, Output: 30}},
	} {
		if err := tally.Add(context.Background(), turn.chat, turn.who, turn.c); err != nil {
			t.Fatal(err)
		}
	}
	if err := tally.Close(); err != nil { // as ship does when it stops
		t.Fatal(err)
	}

	code, out, errOut := runCLI(t, "usage", dir, "--day", "2026-11-26", "--top", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"Tokens on 2026-11-26 (UTC; budgets reset at 2026-11-27T00:00:00Z)",
		"all      3   2400    1000     130   2530",
		"CHAT (top 1 of 2)",
		"telegram:chat:1      2   2100    1000     100   2200",
		"PERSON (top 1 of 3)",
		"telegram:1      1   1200    1000      80   1280",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	code, out, _ = runCLI(t, "usage", dir, "--day", "2026-11-26", "--json")
	var r usage.Report
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil || r.Total.Total() != 2530 || len(r.People) != 3 {
		t.Errorf("--json: exit %d, %v: %s", code, err, out)
	}
	if code, _, errOut := runCLI(t, "usage", dir, "--day", "26.11.2026"); code == 0 || !strings.Contains(errOut, "YYYY-MM-DD") {
		t.Errorf("a bad day: exit %d, %q", code, errOut)
	}
	// A project that never counted anything shows an empty day.
	if code, out, _ := runCLI(t, "usage", t.TempDir()); code != 0 || !strings.Contains(out, "all      0") {
		t.Errorf("no usage file: exit %d:\n%s", code, out)
	}
}
