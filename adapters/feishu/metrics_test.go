package feishu_test

import (
	"testing"

	dto "github.com/prometheus/client_model/go"

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
		fams = adaptertest.Scrape(t, m)
		return adaptertest.Counter(fams, "ship_platform_api_calls_total", "feishu", "message send") == 2
	})
	if got := adaptertest.Counter(fams, "ship_platform_api_errors_total", "feishu", "message send", "429"); got != 1 {
		t.Errorf("send errors with code 429: %v, want 1", got)
	}
}
