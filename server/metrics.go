package server

import "net/http"

// metricsPath is where Prometheus scrapes ship's metrics.
const metricsPath = "/metrics"

// handleMetrics serves Options.Metrics at GET /metrics. The route is
// guarded as every /api route is (isAPIPath): the API token, and the
// browser guard against web pages on other origins and DNS rebinding.
// The counts carry no chat or person, yet they tell how busy ship is and
// which platforms and models it uses: not for anyone on the network. A
// scraper that cannot send a token gets a listener of its own
// (metrics.listen in ship.json); /metrics here then answers 404, as it
// does with metrics.off.
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	if s.opts.Metrics == nil {
		writeError(w, r, http.StatusNotFound, codeNotFound,
			"no metrics here: they are off (metrics.off) or served on their own listener (metrics.listen)")
		return
	}
	s.opts.Metrics.ServeHTTP(w, r)
}
