package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/shipmyagent/ship/internal/browser"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/metrics"
)

// metricsAttackPage is a web page on another origin that tries to read a
// tokenless ship's /metrics: a CORS fetch that reads the body, and a
// no-cors one (which can send but never read).
const metricsAttackPage = `<!doctype html><meta charset="utf-8"><title>not ship</title>
<script>
window.read = [];
(async () => {
  for (const mode of ["cors", "no-cors"]) {
    try {
      const r = await fetch(%s + "/metrics", {mode});
      window.read.push(mode + ": " + r.status + " " + await r.text());
    } catch (e) {
      window.read.push(mode + ": failed");
    }
  }
  window.done = true;
})();
</script>`

// metricsRequests returns the access lines of /metrics requests logged so
// far.
func metricsRequests(e *env) []accessLine {
	var out []accessLine
	for _, l := range strings.Split(e.logs.String(), "\n") {
		var a accessLine
		if json.Unmarshal([]byte(l), &a) == nil && a.Message == "http request" && a.Path == "/metrics" {
			out = append(out, a)
		}
	}
	return out
}

// TestBrowserPagesOnOtherOriginsCannotReadMetrics: a ship without a token
// serves /metrics to a scraper on loopback, and to nothing else. A page on
// another origin in a real Chromium cannot read it (each request is 403
// and the page sees no count), nor can a DNS-rebinding page (its own host
// name on loopback) or another machine.
func TestBrowserPagesOnOtherOriginsCannotReadMetrics(t *testing.T) {
	ctx := browser.ForTest(t)
	e := newEnv(t, setup{handler: fakeopenai.EchoChatSend, metrics: metrics.New(metrics.Options{})})

	page := fmt.Sprintf(metricsAttackPage, jsString(e.srv.URL))
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(page))
	}))
	defer attacker.Close()
	for _, origin := range []string{attacker.URL, strings.Replace(attacker.URL, "127.0.0.1", "localhost", 1)} {
		if err := chromedp.Do(ctx, chromedp.Navigate(origin+"/")); err != nil {
			t.Fatalf("opening the page on %s: %v", origin, err)
		}
		if err := chromedp.Do(ctx, browser.Until(`window.done === true`)); err != nil {
			t.Fatalf("the page on %s: %v", origin, err)
		}
		read := evalIn[[]string](t, ctx, `window.read`)
		if len(read) != 2 {
			t.Errorf("the page on %s tried %q, want both fetches", origin, read)
		}
		for _, r := range read {
			if strings.Contains(r, "ship_") {
				t.Errorf("the page on %s read the metrics: %q", origin, r)
			}
		}
	}
	waitFor(t, "the pages' 4 requests to /metrics", func() bool { return len(metricsRequests(e)) >= 4 })
	for _, a := range metricsRequests(e) {
		if a.Status != http.StatusForbidden {
			t.Errorf("%s /metrics from another origin: %d, want 403", a.Method, a.Status)
		}
	}

	for _, tc := range []struct{ what, remote, target string }{
		{"a rebinding page", "127.0.0.1:5555", "http://evil.example:3000/metrics"},
		{"another machine", "192.0.2.7:5555", "http://127.0.0.1:3000/metrics"},
	} {
		if r := e.direct(http.MethodGet, tc.remote, tc.target, "", nil); r.status != http.StatusForbidden || strings.Contains(string(r.body), "ship_") {
			t.Errorf("%s: %d %s, want 403 without counts", tc.what, r.status, r.body)
		}
	}
	// The scraper on loopback is served.
	if r := e.request(http.MethodGet, "/metrics", nil, nil); r.status != http.StatusOK || !strings.Contains(string(r.body), "ship_") {
		t.Errorf("a loopback scraper without a token: %d %.200s", r.status, r.body)
	}
}
