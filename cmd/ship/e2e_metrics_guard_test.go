package main_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestE2EMetricsListenerAnswersNoWebPage: metrics.listen serves /metrics
// without a token, for a scraper. A web page in the browser of someone on
// the machine must still not read it: a page that reached 127.0.0.1 by DNS
// rebinding sends its own host name, and every page's request carries the
// browser's Sec-Fetch-Site or Origin, which no scraper sends. Each is 403
// with no counts; the scraper (Host 127.0.0.1 or localhost, no browser
// headers) and a person typing the address (Sec-Fetch-Site: none) are
// served.
func TestE2EMetricsListenerAnswersNoWebPage(t *testing.T) {
	t.Parallel()
	fake := startFake(t, nil)
	dir := initProject(t)
	port := freePort(t)
	setConfig(t, dir, "metrics", fmt.Sprintf(`{"listen": "127.0.0.1:%d"}`, port))
	startShip(t, dir, modelEnv(fake, "SHIP_API_TOKEN="+metricsTestToken))
	url := fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	get := func(host string, header map[string]string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		what   string
		host   string
		header map[string]string
	}{
		{"a rebinding page", fmt.Sprintf("evil.example:%d", port), nil},
		{"a rebinding page's fetch", fmt.Sprintf("evil.example:%d", port), map[string]string{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"}},
		{"a page on another origin", "", map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}},
		{"a no-cors fetch from another site", "", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}},
		{"a page of another port on this machine", "", map[string]string{"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "no-cors"}},
	} {
		if status, body := get(tc.host, tc.header); status != http.StatusForbidden || strings.Contains(body, "ship_") {
			t.Errorf("%s: %d %.200s, want 403 without counts", tc.what, status, body)
		}
	}
	for _, tc := range []struct {
		what   string
		host   string
		header map[string]string
	}{
		{"a scraper", "", nil},
		{"a scraper naming localhost", fmt.Sprintf("localhost:%d", port), nil},
		{"a person typing the address", "", map[string]string{"Sec-Fetch-Site": "none", "Sec-Fetch-Mode": "navigate"}},
	} {
		if status, body := get(tc.host, tc.header); status != http.StatusOK || !strings.Contains(body, "ship_") {
			t.Errorf("%s: %d %.200s, want the metrics", tc.what, status, body)
		}
	}
}
