package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/internal/netguard"
	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/runtime/metrics"
)

// newMetrics builds ship's metrics unless metrics.off: nil then, and
// nothing is counted or served.
func newMetrics(cfg config.Config) *metrics.Set {
	if !cfg.Metrics.On() {
		return nil
	}
	return metrics.New(metrics.Options{Process: true})
}

// watchMCP reports the MCP servers' states in the metrics.
func (p parts) watchMCP() {
	p.metrics.MCP(func() []metrics.ServerState {
		list := p.mcp.status()
		out := make([]metrics.ServerState, 0, len(list))
		for _, s := range list {
			out = append(out, metrics.ServerState{Name: s.Name, State: s.State})
		}
		return out
	})
}

// mainMetrics is what the main listener serves at /metrics (behind the
// API token): nothing when metrics are off or have a listener of their
// own (metrics.listen).
func mainMetrics(cfg config.Config, m *metrics.Set) http.Handler {
	if m == nil || cfg.Metrics.Listen != "" {
		return nil
	}
	return m.Handler()
}

// meterAdapters has the platform adapters count their API calls.
func meterAdapters(list []adapters.Adapter, m *metrics.Set) {
	if m == nil {
		return
	}
	for _, a := range list {
		if ma, ok := a.(adapters.Metered); ok {
			ma.MeterWith(m)
		}
	}
}

// watchPartitions reports the queue partitions this replica holds
// (cluster mode; alone there are none to report).
func (r *replica) watchPartitions(m *metrics.Set) {
	if r == nil {
		return
	}
	m.Partitions(func() int { return len(r.queue.Partitions()) })
}

// listenMetrics serves /metrics on metrics.listen, without the API
// token: the address is the operator's choice for a scraper that cannot
// send one (loopback, or a network only the scraper reaches). It returns
// how to stop it; nothing to stop without metrics.listen.
func listenMetrics(cfg config.Config, m *metrics.Set, log zerolog.Logger) (stop func(), err error) {
	if m == nil || cfg.Metrics.Listen == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", cfg.Metrics.Listen)
	if err != nil {
		return nil, fmt.Errorf("listening for metrics on %s (metrics.listen): %w", cfg.Metrics.Listen, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metricsGuard(netguard.LoopbackAddr(ln.Addr().String()), m.Handler()))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("metrics listener stopped")
		}
	}()
	log.Info().Str("addr", "http://"+ln.Addr().String()+"/metrics").Msg("metrics listening")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// metricsGuard keeps web pages off the metrics listener, which has no
// token: a page in the browser of someone on the machine could otherwise
// reach it by DNS rebinding (its requests then carry the page's own host
// name) and read the counts. On a loopback listener the Host must name
// loopback; on any, a request the browser marks as a page's (Origin, or
// Sec-Fetch-Site other than "none", which is a person typing the address)
// is refused. A scraper sends neither.
func metricsGuard(loopback bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		site := r.Header.Get("Sec-Fetch-Site")
		switch {
		case loopback && !netguard.LoopbackHost(r.Host):
			http.Error(w, "metrics answer only to localhost or a loopback address on this listener", http.StatusForbidden)
		case r.Header.Get("Origin") != "" || (site != "" && site != "none"):
			http.Error(w, "metrics are for scrapers, not web pages", http.StatusForbidden)
		default:
			next.ServeHTTP(w, r)
		}
	})
}
