package feishu_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/shipmyagent/ship/adapters/feishu"
	"github.com/shipmyagent/ship/internal/adaptertest"
	"github.com/shipmyagent/ship/internal/fakelark"
	"github.com/shipmyagent/ship/runtime/metrics"
)

// TestRateLimitShowsInTheMetrics: Feishu's frequency limit (HTTP 429,
// code 99991400) is counted as an error of the send with code 429, and
// the retry as a second call.
func TestRateLimitShowsInTheMetrics(t *testing.T) {
	m := metrics.New(metrics.Options{})
	e := newEnv(t, setup{opts: func(o *feishu.Options) { o.Meter = m }})
	e.lk.FailNext(fakelark.PathCreate, 1, fakelark.CodeRateLimit, "request trigger frequency limit")
	e.push(e.lk.P2PText("oc_m", "ou_ann", "hi"))
	e.waitSent(1)
	var fams map[string]*dto.MetricFamily
	adaptertest.WaitFor(t, "the retried send counted", func() bool {
		fams = scrape(t, m)
		return counter(fams, "ship_platform_api_calls_total", "feishu", "message send") == 2
	})
	if got := counter(fams, "ship_platform_api_errors_total", "feishu", "message send", "429"); got != 1 {
		t.Errorf("send errors with code 429: %v, want 1", got)
	}
}

// scrape reads m as Prometheus does, with its text parser.
func scrape(t *testing.T, m *metrics.Set) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// counter is the value of name's series whose label values are vals, in
// order.
func counter(fams map[string]*dto.MetricFamily, name string, vals ...string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
next:
	for _, m := range f.Metric {
		if len(m.Label) != len(vals) {
			continue
		}
		for i, l := range m.Label {
			if l.GetValue() != vals[i] {
				continue next
			}
		}
		return m.Counter.GetValue()
	}
	return 0
}
