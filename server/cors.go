package server

import (
	"net/http"
	"slices"
)

// withCORS lets the configured browser origins call the API. The default is
// none: a page on any website could otherwise make a local ship send
// messages in the user's name.
func (s *Server) withCORS(next http.Handler) http.Handler {
	if len(s.opts.CORSOrigins) == 0 {
		return next
	}
	allowed := s.corsAllowed()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin != "" && allowed(origin) {
			h := w.Header()
			h.Add("Vary", "Origin")
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID")
			h.Set("Access-Control-Max-Age", "600")
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// corsAllowed returns whether a browser origin is in Options.CORSOrigins
// ("*" allows any): the rule withCORS and withBrowserGuard share.
func (s *Server) corsAllowed() func(origin string) bool {
	origins := s.opts.CORSOrigins
	anyOrigin := slices.Contains(origins, "*")
	return func(origin string) bool { return anyOrigin || slices.Contains(origins, origin) }
}
