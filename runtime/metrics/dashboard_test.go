package metrics_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/runtime/metrics"
)

// dashboard is the Grafana dashboard shipped in deploy/grafana.
const dashboard = "../../deploy/grafana/ship-dashboard.json"

// metricName finds the metric names a PromQL expression queries.
var metricName = regexp.MustCompile(`\b(?:ship|process|go)_[a-z_]+\b`)

// TestDashboardQueriesWhatShipServes: the dashboard is valid JSON with
// panels that each query something, every metric it queries is one ship
// serves (a renamed metric cannot leave an empty panel behind), and every
// ship_* family has a panel.
func TestDashboardQueriesWhatShipServes(t *testing.T) {
	raw, err := os.ReadFile(dashboard)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title         string `json:"title"`
		UID           string `json:"uid"`
		SchemaVersion int    `json:"schemaVersion"`
		Panels        []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboard, err)
	}
	if d.Title == "" || d.UID == "" || d.SchemaVersion == 0 || len(d.Panels) == 0 {
		t.Fatalf("%s lacks a title, uid, schemaVersion or panels", dashboard)
	}

	s := metrics.New(metrics.Options{Process: true})
	s.Queue(func() (int, int, int) { return 0, 0, 0 })
	s.Approvals(func() int { return 0 })
	s.Jobs(func() int { return 0 })
	s.Partitions(func() int { return 0 })
	s.MCP(func() []metrics.ServerState { return nil })
	served := s.Names()

	queried := map[string]bool{}
	for _, p := range d.Panels {
		if p.Title == "" || p.Type == "" || len(p.Targets) == 0 {
			t.Errorf("panel %q (%s) has no title, type or query", p.Title, p.Type)
		}
		for _, tg := range p.Targets {
			for _, name := range metricName.FindAllString(tg.Expr, -1) {
				base := name
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if b, ok := strings.CutSuffix(name, suffix); ok && slices.Contains(served, b) {
						base = b
					}
				}
				if !slices.Contains(served, base) {
					t.Errorf("panel %q queries %s, which ship does not serve", p.Title, name)
				}
				queried[base] = true
			}
		}
	}
	for _, name := range served {
		if strings.HasPrefix(name, "ship_") && !queried[name] {
			t.Errorf("%s has no panel in the dashboard", name)
		}
	}
}
