package server

import (
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// intakeRoutes are the routes that start new work: a turn, a message into a
// chat, a task run. While the server drains they are refused with 503 and
// Retry-After, so clients and platforms send again later (or to another
// replica behind the load balancer). Routes that help a running turn end
// (approvals, answers to its questions) and the read-only ones stay open.
var intakeRoutes = []string{
	"POST /api/execute",
	"POST /api/send",
	"POST /api/tasks/{name}/run",
	"POST /console/send",
	"POST /console/tasks/{name}/run",
}

// drainState is whether the server drains (Server.Drain), and for how long
// it tells clients to wait.
type drainState struct {
	on         atomic.Bool
	retryAfter atomic.Int64 // whole seconds
	// intake matches the routes refused while draining: the intakeRoutes
	// and the platforms' webhooks.
	intake *http.ServeMux
}

func newDrainState(webhooks map[string]http.Handler) *drainState {
	d := &drainState{intake: http.NewServeMux()}
	none := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	for _, p := range intakeRoutes {
		d.intake.Handle(p, none)
	}
	for p := range webhooks {
		d.intake.Handle(p, none)
	}
	return d
}

// Drain makes the server refuse new work from now on: the intake routes
// and the platforms' webhooks answer 503 with Retry-After (a platform then
// delivers the event again later, to this process after its restart or to
// another replica), and GET /health answers 503 "draining" so load
// balancers stop sending here. Requests already being answered (a running
// /api/execute) are not affected. retryAfter is rounded up to whole
// seconds, at least one.
func (s *Server) Drain(retryAfter time.Duration) {
	secs := max(int64((retryAfter+time.Second-1)/time.Second), 1)
	s.drain.retryAfter.Store(secs)
	s.drain.on.Store(true)
	s.log.Info().Int64("retryAfterSeconds", secs).Msg("draining: new work is refused with 503")
}

// Draining reports whether Drain was called.
func (s *Server) Draining() bool { return s.drain.on.Load() }

// withDrain answers what a draining server no longer takes.
func (s *Server) withDrain(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.drain.on.Load() {
			next.ServeHTTP(w, r)
			return
		}
		if r.Method == http.MethodGet && r.URL.Path == "/health" {
			writeJSON(w, r, http.StatusServiceUnavailable, map[string]string{"status": "draining"})
			return
		}
		if _, pattern := s.drain.intake.Handler(r); pattern == "" {
			next.ServeHTTP(w, r)
			return
		}
		secs := s.drain.retryAfter.Load()
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		msg := "ship is stopping (draining for a restart): send this again in " + strconv.FormatInt(secs, 10) + " s"
		if strings.HasPrefix(r.URL.Path, "/console/") {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(msg))
			return
		}
		writeError(w, r, http.StatusServiceUnavailable, codeShuttingDown, msg)
	})
}
