package main

import (
	"slices"
	"testing"

	"github.com/shipmyagent/ship/runtime/config"
)

// TestNeedsRestartNamesTheSummaryModel: summaries keep the client built at
// start, so a change of the llm.models entry history.summaryModel names
// needs a restart, while a change of another model does not.
func TestNeedsRestartNamesTheSummaryModel(t *testing.T) {
	var cfg config.Config
	cfg.History.SummaryModel = "cheap"
	if got := needsRestart([]string{"llm.models.cheap.model", "queue.capacity"}, cfg); !slices.Equal(got, []string{"queue.capacity", "history.summaryModel"}) {
		t.Errorf("a changed summary model: %v", got)
	}
	if got := needsRestart([]string{"llm.models.deep.model"}, cfg); len(got) != 0 {
		t.Errorf("another model changed: %v", got)
	}
}
