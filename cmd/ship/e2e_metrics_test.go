package main_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

const metricsTestToken = "metrics-e2e-token-0123456789abcdef"

// turnsOf parses a scrape with the Prometheus text parser and returns
// ship_turns_total{channel="api",outcome="ok"}.
func turnsOf(t *testing.T, body []byte) float64 {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parsing /metrics: %v\n%s", err, body)
	}
	if _, ok := fams["ship_queue_depth"]; !ok {
		t.Fatalf("no ship_queue_depth in\n%s", body)
	}
	f := fams["ship_turns_total"] // none before the first turn
	if f == nil {
		return 0
	}
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["channel"] == "api" && labels["outcome"] == "ok" {
			return m.Counter.GetValue()
		}
	}
	return 0
}

// TestE2EMetricsOnTheMainListener: by default ship serves /metrics on its
// own port behind the API token, and a turn moves the count.
func TestE2EMetricsOnTheMainListener(t *testing.T) {
	t.Parallel()
	fake := startFake(t, nil)
	p := startShip(t, initProject(t), modelEnv(fake, "SHIP_API_TOKEN="+metricsTestToken))
	if r := p.do(t, "GET", "/metrics", ""); r.status != http.StatusUnauthorized {
		t.Errorf("no token: %d %s, want 401", r.status, r.body)
	}
	auth := "Authorization: Bearer " + metricsTestToken
	r := p.do(t, "GET", "/metrics", "", auth)
	if r.status != http.StatusOK || turnsOf(t, r.body) != 0 {
		t.Fatalf("before a turn: %d %s", r.status, r.body)
	}
	if r := p.do(t, "POST", "/api/execute", executeBody("", "hello"), auth); r.status != http.StatusOK {
		t.Fatalf("execute: %d %s", r.status, r.body)
	}
	if r := p.do(t, "GET", "/metrics", "", auth); turnsOf(t, r.body) != 1 {
		t.Errorf("after a turn:\n%s", r.body)
	}
}

// TestE2EMetricsOnTheirOwnListener: with metrics.listen the metrics are
// served there without the token (for a scraper that cannot send one),
// and the main listener has no /metrics; metrics.off serves none.
func TestE2EMetricsOnTheirOwnListener(t *testing.T) {
	t.Parallel()
	fake := startFake(t, nil)
	dir := initProject(t)
	port := freePort(t)
	setConfig(t, dir, "metrics", fmt.Sprintf(`{"listen": "127.0.0.1:%d"}`, port))
	p := startShip(t, dir, modelEnv(fake, "SHIP_API_TOKEN="+metricsTestToken))
	auth := "Authorization: Bearer " + metricsTestToken
	if r := p.do(t, "GET", "/metrics", "", auth); r.status != http.StatusNotFound {
		t.Errorf("main listener: %d, want 404 (metrics have their own listener)", r.status)
	}
	if r := p.do(t, "POST", "/api/execute", executeBody("", "hello"), auth); r.status != http.StatusOK {
		t.Fatalf("execute: %d %s", r.status, r.body)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("metrics listener: %d %v", resp.StatusCode, err)
	}
	if got := turnsOf(t, body); got != 1 {
		t.Errorf("turns on the metrics listener: %v, want 1", got)
	}

	off := initProject(t)
	setConfig(t, off, "metrics", `{"off": true}`)
	q := startShip(t, off, modelEnv(fake, "SHIP_API_TOKEN="+metricsTestToken))
	if r := q.do(t, "GET", "/metrics", "", auth); r.status != http.StatusNotFound {
		t.Errorf("metrics.off: %d, want 404", r.status)
	}
}

// gauge parses a scrape and returns the value of an unlabelled gauge.
func gauge(body []byte, name string) (float64, bool) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil || fams[name] == nil || len(fams[name].Metric) != 1 {
		return 0, false
	}
	return fams[name].Metric[0].Gauge.GetValue(), true
}

// TestE2EMetricsShowTheClusterPartitions: in a cluster each replica
// reports the queue partitions it holds, and together they hold all 16.
func TestE2EMetricsShowTheClusterPartitions(t *testing.T) {
	t.Parallel()
	fake := startFake(t, nil)
	rs := newReplicas(t, 2, "m", nil)
	for _, r := range rs {
		r.start(t, modelEnv(fake))
	}
	within(t, clusterReady, "the replicas holding all 16 partitions between them", func() bool {
		total := 0.0
		for _, r := range rs {
			resp, err := r.proc().send("GET", "/metrics", "")
			if err != nil || resp.status != http.StatusOK {
				return false
			}
			held, ok := gauge(resp.body, "ship_cluster_partitions_held")
			if !ok {
				return false
			}
			total += held
		}
		return total == 16
	})
}
