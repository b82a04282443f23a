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

// clusterStatus is what the bench reads of GET /api/status.
type clusterStatus struct {
	Partitions int `json:"partitions"`
	Replicas   []struct {
		Name       string `json:"name"`
		Partitions []int  `json:"partitions"`
	} `json:"replicas"`
}

// status reads p's cluster status; false when it cannot be read (yet).
func status(ctx context.Context, p *shipproc.Proc, client *http.Client) (clusterStatus, bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/api/status", nil)
	if err != nil {
		return clusterStatus{}, false
	}
	resp, err := client.Do(req)
	if err != nil {
		return clusterStatus{}, false
	}
	defer resp.Body.Close()
	var st struct {
		Cluster *clusterStatus `json:"cluster"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&st) != nil || st.Cluster == nil {
		return clusterStatus{}, false
	}
	return *st.Cluster, true
}

// waitReplicas polls p's GET /api/status until its cluster.replicas lists
// n replicas.
func waitReplicas(ctx context.Context, p *shipproc.Proc, client *http.Client, n int) error {
	return p.Poll(ctx, fmt.Sprintf("/api/status listing %d replicas", n), pollEvery, func() bool {
		st, ok := status(ctx, p, client)
		return ok && len(st.Replicas) == n
	})
}

// waitSettled polls p's GET /api/status until the n replicas hold every
// partition once between them and none holds more than its ceiling share:
// the hand-over after the replicas joined one by one is over, so the load
// meets the assignment a cluster keeps. It returns who holds what.
func waitSettled(ctx context.Context, p *shipproc.Proc, client *http.Client, n int) (total int, held map[string][]int, err error) {
	err = p.Poll(ctx, "the partitions settled over the replicas", pollEvery, func() bool {
		st, ok := status(ctx, p, client)
		if !ok || len(st.Replicas) != n || st.Partitions < 1 {
			return false
		}
		seen := make([]bool, st.Partitions)
		count := 0
		for _, r := range st.Replicas {
			if len(r.Partitions) > (st.Partitions+n-1)/n {
				return false
			}
			for _, id := range r.Partitions {
				if id < 0 || id >= st.Partitions || seen[id] {
					return false
				}
				seen[id] = true
				count++
			}
		}
		if count != st.Partitions {
			return false
		}
		total, held = st.Partitions, map[string][]int{}
		for _, r := range st.Replicas {
			held[r.Name] = r.Partitions
		}
		return true
	})
	return total, held, err
}

// withSections sets sections of ship.json (shipproc.Init's edit).
func withSections(sections map[string]any) func(map[string]any) {
	return func(doc map[string]any) {
		for k, v := range sections {
			doc[k] = v
		}
	}
}
