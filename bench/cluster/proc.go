package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/shipmyagent/ship/internal/shipproc"
)

// pollEvery is how often the bench looks whether a process is ready.
const pollEvery = 20 * time.Millisecond

// waitReplicas polls p's GET /api/status until its cluster.replicas lists
// n replicas.
func waitReplicas(ctx context.Context, p *shipproc.Proc, client *http.Client, n int) error {
	return p.Poll(ctx, fmt.Sprintf("/api/status listing %d replicas", n), pollEvery, func() bool {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/api/status", nil)
		if err != nil {
			return false
		}
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var st struct {
			Cluster *struct {
				Replicas []json.RawMessage `json:"replicas"`
			} `json:"cluster"`
		}
		return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&st) == nil &&
			st.Cluster != nil && len(st.Cluster.Replicas) == n
	})
}

// withSections sets sections of ship.json (shipproc.Init's edit).
func withSections(sections map[string]any) func(map[string]any) {
	return func(doc map[string]any) {
		for k, v := range sections {
			doc[k] = v
		}
	}
}
