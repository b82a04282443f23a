package metrics_test

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/shipmyagent/ship/runtime/metrics"
)

// scrape serves the Set's handler and parses the answer with the
// Prometheus text parser: what a Prometheus server would read.
func scrape(t *testing.T, s *metrics.Set) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d", rec.Code)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q, want the text format 0.0.4", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("parsing /metrics: %v\n%s", err, rec.Body.String())
	}
	return fams
}

// value finds the sample of name with the given labels (all of them).
func value(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		if len(got) != len(labels) {
			continue
		}
		for k, v := range labels {
			if got[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func TestCountsParseAsPrometheusReadsThem(t *testing.T) {
	s := metrics.New(metrics.Options{Process: true})
	s.Queue(func() (int, int, int) { return 3, 1, 1000 })
	s.Approvals(func() int { return 2 })
	s.Jobs(func() int { return 1 })
	s.Partitions(func() int { return 4 })
	s.MCP(func() []metrics.ServerState {
		return []metrics.ServerState{{Name: "files", State: "ready"}, {Name: `we"ird\name`, State: "failed"}}
	})
	s.Turn("telegram", metrics.OutcomeOK, 1500*time.Millisecond, 20*time.Millisecond)
	s.Turn("telegram", metrics.OutcomeOK, 400*time.Second, 0) // past the last bucket
	s.Turn("api", metrics.OutcomeFailed, time.Second, 0)
	s.Refused("qq")
	s.ModelCall("default", "ok", 700*time.Millisecond)
	s.Tokens("default", 1200, 1024, 80)
	s.PlatformCall("telegram", "sendMessage", metrics.CodeOK)
	s.PlatformCall("telegram", "sendMessage", "429")
	s.JobFinished("done")

	fams := scrape(t, s)
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"ship_turns_total", map[string]string{"channel": "telegram", "outcome": "ok"}, 2},
		{"ship_turns_total", map[string]string{"channel": "api", "outcome": "failed"}, 1},
		{"ship_turns_total", map[string]string{"channel": "qq", "outcome": "refused"}, 1},
		{"ship_turn_duration_seconds", map[string]string{"channel": "telegram"}, 2},
		{"ship_queue_wait_seconds", nil, 3},
		{"ship_model_call_duration_seconds", map[string]string{"model": "default", "outcome": "ok"}, 1},
		{"ship_model_input_tokens_total", map[string]string{"model": "default"}, 1200},
		{"ship_model_cached_input_tokens_total", map[string]string{"model": "default"}, 1024},
		{"ship_model_output_tokens_total", map[string]string{"model": "default"}, 80},
		{"ship_platform_api_calls_total", map[string]string{"platform": "telegram", "method": "sendMessage"}, 2},
		{"ship_platform_api_errors_total", map[string]string{"platform": "telegram", "method": "sendMessage", "code": "429"}, 1},
		{"ship_jobs_finished_total", map[string]string{"state": "done"}, 1},
		{"ship_queue_depth", nil, 3},
		{"ship_queue_running", nil, 1},
		{"ship_queue_capacity", nil, 1000},
		{"ship_approvals_pending", nil, 2},
		{"ship_jobs_running", nil, 1},
		{"ship_cluster_partitions_held", nil, 4},
		{"ship_mcp_server_state", map[string]string{"server": "files", "state": "ready"}, 1},
		{"ship_mcp_server_state", map[string]string{"server": `we"ird\name`, "state": "failed"}, 1},
	}
	for _, c := range checks {
		got, ok := value(fams, c.name, c.labels)
		if !ok || got != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	// A histogram's buckets are cumulative and end in +Inf = count: the
	// 400 s turn is past the last bucket, the 1.5 s one in le=2.5.
	var h *dto.Histogram
	for _, m := range fams["ship_turn_duration_seconds"].Metric {
		if m.Label[0].GetValue() == "telegram" {
			h = m.Histogram
		}
	}
	if h == nil || h.GetSampleCount() != 2 || h.GetSampleSum() != 401.5 {
		t.Fatalf("turn histogram %v", h)
	}
	for _, b := range h.Bucket {
		if math.IsInf(b.GetUpperBound(), 1) {
			continue // +Inf is the count, checked above
		}
		want := uint64(0)
		if b.GetUpperBound() >= 2.5 {
			want = 1
		}
		if b.GetCumulativeCount() != want {
			t.Errorf("bucket le=%v holds %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
	if _, ok := value(fams, "process_cpu_seconds_total", nil); !ok {
		t.Error("no process_cpu_seconds_total")
	}
	for _, name := range []string{"process_resident_memory_bytes", "process_open_fds", "go_goroutines", "go_memstats_heap_alloc_bytes", "process_start_time_seconds"} {
		if v, ok := value(fams, name, nil); !ok || v <= 0 {
			t.Errorf("%s = %v (found %v), want a positive value", name, v, ok)
		}
	}
	for name, f := range fams {
		if f.GetHelp() == "" {
			t.Errorf("%s has no HELP", name)
		}
	}
}

// TestLabelsStayBounded: a label that is handed ever new values (a
// mistake, or a platform answering with ever new codes) stops at a fixed
// number of series; the rest count as "other", and nothing is lost.
func TestLabelsStayBounded(t *testing.T) {
	s := metrics.New(metrics.Options{})
	for i := range 500 {
		s.PlatformCall("telegram", "sendMessage", fmt.Sprint(400000+i))
	}
	s.PlatformCall("telegram", "sendMessage", "bad\xffutf8")
	fams := scrape(t, s)
	errs := fams["ship_platform_api_errors_total"]
	if n := len(errs.Metric); n > 65 {
		t.Errorf("%d series for one label fed 500 values", n)
	}
	total := 0.0
	for _, m := range errs.Metric {
		total += m.Counter.GetValue()
	}
	if total != 501 {
		t.Errorf("errors counted %v, want 501 (none lost to the bound)", total)
	}
	if v, ok := value(fams, "ship_platform_api_errors_total", map[string]string{"platform": "telegram", "method": "sendMessage", "code": "other"}); !ok || v < 400 {
		t.Errorf("other = %v (%v)", v, ok)
	}
}

// TestNilSetCountsNothing: with metrics off the counting points hold a
// nil Set, and calling them is safe.
func TestNilSetCountsNothing(t *testing.T) {
	var s *metrics.Set
	s.Turn("api", metrics.OutcomeOK, time.Second, 0)
	s.Refused("api")
	s.ModelCall("m", "ok", time.Second)
	s.Tokens("m", 1, 2, 3)
	s.PlatformCall("telegram", "getMe", "ok")
	s.JobFinished("done")
	s.Queue(func() (int, int, int) { return 0, 0, 0 })
	s.MCP(nil)
}

// BenchmarkTurn is what a turn pays for its counting.
func BenchmarkTurn(b *testing.B) {
	s := metrics.New(metrics.Options{})
	b.ReportAllocs()
	for b.Loop() {
		s.Turn("telegram", metrics.OutcomeOK, time.Second, time.Millisecond)
		s.ModelCall("default", "ok", time.Second)
		s.Tokens("default", 100, 0, 10)
		s.PlatformCall("telegram", "sendMessage", metrics.CodeOK)
	}
}

// TestRegisteringAgainReplaces: a gauge registered again (an engine
// built anew on the same Set) reports the new value, once.
func TestRegisteringAgainReplaces(t *testing.T) {
	s := metrics.New(metrics.Options{})
	s.Approvals(func() int { return 1 })
	s.Approvals(func() int { return 5 })
	fams := scrape(t, s)
	if f := fams["ship_approvals_pending"]; f == nil || len(f.Metric) != 1 || f.Metric[0].Gauge.GetValue() != 5 {
		t.Errorf("ship_approvals_pending = %v", f)
	}
}
