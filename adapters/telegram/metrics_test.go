package telegram_test

import (
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/shipmyagent/ship/adapters/telegram"
	"github.com/shipmyagent/ship/internal/adaptertest"
	"github.com/shipmyagent/ship/internal/faketelegram"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/metrics"
)

// TestFloodControlShowsInTheMetrics: a 429 from the Bot API (flood
// control) is counted as an error of sendMessage with code 429, the
// retry as a second call, and the turn as answered on telegram.
func TestFloodControlShowsInTheMetrics(t *testing.T) {
	m := metrics.New(metrics.Options{})
	e := newEnv(t, setup{
		opts:   func(o *telegram.Options) { o.Meter = m },
		engine: func(o *engine.Options) { o.Metrics = m },
	})
	e.tg.FailNext("sendMessage", 1, faketelegram.Failure{ErrorCode: 429, RetryAfter: 1})
	e.tg.Push(e.tg.PrivateText(9, "ann", "hi"))
	e.waitSent(1)

	// The fake records the reply before the adapter has read the answer
	// and counted it: wait for the count, then read the scrape.
	var fams map[string]*dto.MetricFamily
	adaptertest.WaitFor(t, "the retried sendMessage and the turn counted", func() bool {
		fams = adaptertest.Scrape(t, m)
		return adaptertest.Counter(fams, "ship_platform_api_calls_total", "telegram", "sendMessage") == 2 &&
			adaptertest.Counter(fams, "ship_turns_total", "telegram", "ok") == 1
	})
	if got := adaptertest.Counter(fams, "ship_platform_api_errors_total", "telegram", "sendMessage", "429"); got != 1 {
		t.Errorf("sendMessage errors with code 429: %v, want 1", got)
	}
	if got := adaptertest.Counter(fams, "ship_platform_api_calls_total", "telegram", "getMe"); got < 1 {
		t.Errorf("getMe calls: %v", got)
	}
}
