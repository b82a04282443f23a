package engine_test

import (
	"strings"
	"testing"

	"github.com/shipmyagent/ship/runtime/llm"
	"github.com/shipmyagent/ship/runtime/records"
)

// Two engines over one table of choices are two replicas of a cluster: a
// /model made through one is the model of the chat's next turn on the
// other, and back to the default likewise.
func TestModelSwitchHoldsOnEveryEngineSharingTheChoices(t *testing.T) {
	shared := records.NewMemory()
	a := newHarness(t, harnessOptions{models: fastModel, modelChoices: shared})
	b := newHarness(t, harnessOptions{models: fastModel, modelChoices: shared})
	if got := a.command("1", "private", "u1", "model", "fast"); !strings.Contains(got, "now uses fast") {
		t.Fatalf("/model fast = %q", got)
	}
	b.ask("1", "a1", "on the other replica")
	b.ask("2", "b1", "another chat")
	if one, two := b.modelFor("on the other replica"), b.modelFor("another chat"); one != "fast-model" || two != "fake-model" {
		t.Fatalf("on the other engine chat 1 got %s (want fast-model), chat 2 %s (want fake-model)", one, two)
	}
	if got := b.command("1", "private", "u1", "status", ""); !strings.Contains(got, "Model: fast (openai/fast-model)") {
		t.Errorf("/status on the other engine = %q", got)
	}
	if got := b.command("1", "private", "u1", "model", "default"); !strings.Contains(got, "now uses default") {
		t.Fatalf("/model default = %q", got)
	}
	a.ask("1", "a2", "back on the first")
	if m := a.modelFor("back on the first"); m != "fake-model" {
		t.Errorf("after /model default on the other engine: %s", m)
	}

	// An engine whose config lacks the chosen model ignores the choice
	// and says so, once; the record stays for the engines that have it.
	a.command("1", "private", "u1", "model", "fast")
	c := newHarness(t, harnessOptions{models: map[string]llm.Config{"other": {Model: "other-model"}}, modelChoices: shared})
	c.ask("1", "c1", "model unknown here")
	c.ask("1", "c2", "still unknown here")
	if m := c.modelFor("still unknown here"); m != "fake-model" {
		t.Errorf("without the chosen model in its config: %s, want the default", m)
	}
	if n := strings.Count(c.logs.String(), "no longer configured"); n != 1 {
		t.Errorf("%d log lines about the unconfigured model, want 1:\n%s", n, c.logs.String())
	}
	b.ask("1", "b2", "where it is configured")
	if m := b.modelFor("where it is configured"); m != "fast-model" {
		t.Errorf("an engine that has the model: %s, want fast-model", m)
	}
}
