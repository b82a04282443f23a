package qq_test

import (
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/shipmyagent/ship/adapters/qq"
	"github.com/shipmyagent/ship/internal/adaptertest"
	"github.com/shipmyagent/ship/internal/fakeqq"
	"github.com/shipmyagent/ship/runtime/metrics"
)

// TestRateLimitShowsInTheMetrics: a 429 from the QQ bot API is counted
// as an error of the send with code 429, and the retry as a second call.
func TestRateLimitShowsInTheMetrics(t *testing.T) {
	m := metrics.New(metrics.Options{})
	e := newEnv(t, setup{opts: func(o *qq.Options) { o.Meter = m }})
	e.qq.FailNext(fakeqq.C2CPath("U9"), 1, http.StatusTooManyRequests, 0, "too many requests")
	e.qq.PushC2C("U9", "hi")
	e.waitSent(1)
	var fams map[string]*dto.MetricFamily
	adaptertest.WaitFor(t, "the retried send counted", func() bool {
		fams = adaptertest.Scrape(t, m)
		return adaptertest.Counter(fams, "ship_platform_api_calls_total", "qq", "message send") == 2
	})
	if got := adaptertest.Counter(fams, "ship_platform_api_errors_total", "qq", "message send", "429"); got != 1 {
		t.Errorf("send errors with code 429: %v, want 1", got)
	}
}
