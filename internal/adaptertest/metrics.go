package adaptertest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/shipmyagent/ship/runtime/metrics"
)

// Scrape reads m as Prometheus does, with its text parser.
func Scrape(t testing.TB, m *metrics.Set) map[string]*dto.MetricFamily {
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

// Counter is the value of name's series whose label values are vals, in
// order (0 when there is none).
func Counter(fams map[string]*dto.MetricFamily, name string, vals ...string) float64 {
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
