package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/metrics"
)

const metricsToken = "metrics-test-token-0123456789abcdef"

// scrape GETs /metrics with the token and parses it with the Prometheus
// text parser.
func (e *env) scrape() map[string]*dto.MetricFamily {
	e.t.Helper()
	r := e.request(http.MethodGet, "/metrics", nil, map[string]string{"Authorization": "Bearer " + metricsToken})
	if r.status != http.StatusOK {
		e.t.Fatalf("GET /metrics: %d %s", r.status, r.body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(r.body)))
	if err != nil {
		e.t.Fatalf("parsing /metrics: %v\n%s", err, r.body)
	}
	return fams
}

func sum(fams map[string]*dto.MetricFamily, name string, match map[string]string) float64 {
	total := 0.0
	f := fams[name]
	if f == nil {
		return 0
	}
next:
	for _, m := range f.Metric {
		for _, l := range m.Label {
			if want, ok := match[l.GetName()]; ok && want != l.GetValue() {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			total += m.Counter.GetValue()
		case m.Gauge != nil:
			total += m.Gauge.GetValue()
		case m.Histogram != nil:
			total += float64(m.Histogram.GetSampleCount())
		}
	}
	return total
}

func series(fams map[string]*dto.MetricFamily) int {
	n := 0
	for _, f := range fams {
		n += len(f.Metric)
	}
	return n
}

// TestMetricsMoveWhenATurnRuns: a turn through the API shows in /metrics
// as Prometheus reads it: one more turn of channel api with outcome ok,
// its duration and wait observed, a model call timed under the configured
// model's name, and the tokens the provider reported.
func TestMetricsMoveWhenATurnRuns(t *testing.T) {
	e := newEnv(t, setup{handler: fakeopenai.EchoChatSend, token: metricsToken, metrics: metrics.New(metrics.Options{Process: true})})
	before := e.scrape()
	if got := sum(before, "ship_turns_total", nil); got != 0 {
		t.Fatalf("turns before any: %v", got)
	}
	if got := sum(before, "ship_queue_capacity", nil); got != 1000 {
		t.Errorf("queue capacity %v, want the default 1000", got)
	}
	res := e.request(http.MethodPost, "/api/execute", []byte(`{"instructions":"hello","chatId":"m1"}`),
		map[string]string{"Authorization": "Bearer " + metricsToken})
	if res.status != http.StatusOK {
		t.Fatalf("execute: %d %s", res.status, res.body)
	}
	after := e.scrape()
	for _, c := range []struct {
		name  string
		match map[string]string
		want  float64
	}{
		{"ship_turns_total", map[string]string{"channel": "api", "outcome": "ok"}, 1},
		{"ship_turn_duration_seconds", map[string]string{"channel": "api"}, 1},
		{"ship_queue_wait_seconds", nil, 1},
		{"ship_queue_depth", nil, 0},
	} {
		if got := sum(after, c.name, c.match); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.match, got, c.want)
		}
	}
	if got := sum(after, "ship_model_call_duration_seconds", map[string]string{"model": "default", "outcome": "ok"}); got < 1 {
		t.Errorf("model calls of the default model: %v", got)
	}
	if got := sum(after, "ship_model_input_tokens_total", map[string]string{"model": "default"}); got <= 0 {
		t.Errorf("input tokens of the default model: %v (the fake reports usage)", got)
	}
	if got := sum(after, "ship_model_output_tokens_total", map[string]string{"model": "default"}); got <= 0 {
		t.Errorf("output tokens of the default model: %v", got)
	}
}

// TestMetricsNeedTheToken: on the main listener /metrics is guarded as
// /api is: no token or a wrong one gets 401, a web page on another
// origin 403, and the answer says nothing of the counts.
func TestMetricsNeedTheToken(t *testing.T) {
	e := newEnv(t, setup{handler: fakeopenai.EchoChatSend, token: metricsToken, metrics: metrics.New(metrics.Options{})})
	for name, h := range map[string]map[string]string{
		"no token":    nil,
		"wrong token": {"Authorization": "Bearer not-the-token-at-all-0123456789"},
	} {
		r := e.request(http.MethodGet, "/metrics", nil, h)
		if r.status != http.StatusUnauthorized || strings.Contains(string(r.body), "ship_") {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	r := e.request(http.MethodGet, "/metrics", nil, map[string]string{"Authorization": "Bearer " + metricsToken, "Origin": "https://evil.example"})
	if r.status != http.StatusForbidden {
		t.Errorf("from another origin: %d %s", r.status, r.body)
	}
}

// TestMetricsSeriesDoNotGrowWithChats: turns in 50 chats leave as many
// series as turns in one: no label carries a chat, a person or a
// request.
func TestMetricsSeriesDoNotGrowWithChats(t *testing.T) {
	e := newEnv(t, setup{handler: fakeopenai.EchoChatSend, token: metricsToken, metrics: metrics.New(metrics.Options{})})
	run := func(chat string) {
		body := fmt.Sprintf(`{"instructions":"hi","chatId":%q,"userId":"u-%s"}`, chat, chat)
		r := e.request(http.MethodPost, "/api/execute", []byte(body), map[string]string{"Authorization": "Bearer " + metricsToken})
		if r.status != http.StatusOK {
			t.Fatalf("execute in %s: %d %s", chat, r.status, r.body)
		}
	}
	run("c0")
	one := series(e.scrape())
	for i := 1; i < 50; i++ {
		run(fmt.Sprintf("c%d", i))
	}
	fams := e.scrape()
	if got := series(fams); got != one {
		t.Errorf("%d series after 50 chats, %d after one", got, one)
	}
	if got := sum(fams, "ship_turns_total", nil); got != 50 {
		t.Errorf("turns %v, want 50", got)
	}
}
