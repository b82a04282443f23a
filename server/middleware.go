package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/server/internal/throttle"
)

// requestIDHeader carries the request id back to the client, so a user can
// quote it and an operator can find every log line of that request.
const requestIDHeader = "X-Request-Id"

// randomHex returns n random bytes in hex. crypto/rand never fails on the
// platforms Go supports (it aborts the process instead), so there is no
// error to handle.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func newRequestID() string { return "r-" + randomHex(8) }

// statusWriter remembers the status for the access log and whether the
// header went out, so the panic handler knows if it can still answer.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flushing for
// streamed answers, deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// withRequestLog gives every request an id and a logger carrying it, and logs
// one line per request. It never logs headers or bodies: they may hold the
// bearer token or user text.
func (s *Server) withRequestLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := newRequestID()
		log := s.log.With().Str("requestId", id).Logger()
		r = r.WithContext(log.WithContext(withRequestID(r.Context(), id)))
		w.Header().Set(requestIDHeader, id)

		sw := &statusWriter{ResponseWriter: w}
		// Deferred so an aborted response (a re-raised panic) is logged too.
		defer func() {
			status := sw.status
			if status == 0 {
				status = http.StatusOK // what net/http sends for a handler that wrote nothing
			}
			ev := log.Info().Str("method", r.Method).Str("path", r.URL.Path).Int("status", status).
				Float64("durationMs", float64(time.Since(start).Microseconds())/1000)
			if r.Context().Err() != nil {
				ev = ev.Bool("clientGone", true)
			}
			ev.Msg("http request")
		}()
		next.ServeHTTP(sw, r)
	})
}

// withRecover turns a panic in a handler into a 500 so one bad request
// cannot take the process down or leave the client without an answer.
func (s *Server) withRecover(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v) // net/http's own way to abort a response; it logs nothing
			}
			zerolog.Ctx(r.Context()).Error().Interface("panic", v).Str("stack", string(debug.Stack())).
				Msg("handler panicked")
			if sw, ok := w.(*statusWriter); ok && sw.status != 0 {
				// The header is out: the client sees a cut-off body, which is
				// the only honest signal left.
				panic(http.ErrAbortHandler)
			}
			writeError(w, r, http.StatusInternalServerError, codeInternal, msgInternal)
		}()
		next.ServeHTTP(w, r)
	})
}

// withAuth requires a bearer token on every /api route when one is
// configured, and tells the handlers who the caller is: the identity of
// its token, or chat.APIAnonymous when auth is off. Unknown /api paths are
// guarded too, so the route list cannot be probed. An address that keeps
// presenting wrong tokens is held back (429) for a while, with the right
// token too, so guessing stays slow; a request without a token is no
// guess and is not counted.
func (s *Server) withAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isAPIPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		if s.auth == nil {
			next.ServeHTTP(w, r.WithContext(withIdentity(r.Context(), chat.APIAnonymous)))
			return
		}
		identity, presented := s.auth.authenticate(r)
		addr := throttle.Key(r.RemoteAddr)
		var wait time.Duration
		if presented {
			var held bool
			wait, held = s.throttle.Check(addr, identity != "")
			if held {
				zerolog.Ctx(r.Context()).Warn().Str("remote", addr).
					Msg("too many wrong API tokens from one address: it is held back for a minute")
			}
		} else {
			wait = s.throttle.Wait(addr)
		}
		if wait > 0 {
			w.Header().Set("Retry-After", throttle.RetryAfter(wait))
			writeError(w, r, http.StatusTooManyRequests, codeRateLimited,
				"too many wrong tokens from your address; try again in "+throttle.RetryAfter(wait)+" s")
			return
		}
		if identity == "" {
			w.Header().Set("WWW-Authenticate", "Bearer")
			writeError(w, r, http.StatusUnauthorized, codeUnauthorized,
				"missing or invalid bearer token (send Authorization: Bearer <token>)")
			return
		}
		next.ServeHTTP(w, r.WithContext(withIdentity(r.Context(), identity)))
	})
}

func isAPIPath(p string) bool {
	// /metrics is guarded as the API is (metrics.go).
	return p == "/api" || strings.HasPrefix(p, "/api/") || p == metricsPath
}

// withJSONFallbacks answers unknown routes and wrong methods with the JSON
// error body instead of the mux's plain text.
func withJSONFallbacks(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		// No route matched. The mux's own handler knows whether the path
		// exists with other methods; run it against a scratch writer to
		// learn that and its Allow list.
		probe := &probeWriter{header: http.Header{}}
		h.ServeHTTP(probe, r)
		if probe.status == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", probe.header.Get("Allow"))
			writeError(w, r, http.StatusMethodNotAllowed, codeMethodNotAllowed,
				r.Method+" is not allowed on "+r.URL.Path+"; allowed: "+probe.header.Get("Allow"))
			return
		}
		writeError(w, r, http.StatusNotFound, codeNotFound, "no route for "+r.Method+" "+r.URL.Path)
	})
}

// probeWriter records what a handler would answer and discards the body.
type probeWriter struct {
	header http.Header
	status int
}

func (p *probeWriter) Header() http.Header { return p.header }

func (p *probeWriter) WriteHeader(status int) {
	if p.status == 0 {
		p.status = status
	}
}

func (p *probeWriter) Write(b []byte) (int, error) {
	if p.status == 0 {
		p.status = http.StatusOK
	}
	return len(b), nil
}

type requestIDKey struct{}

func withRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// requestID returns the id withRequestLog gave the request.
func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}
