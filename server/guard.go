package server

import (
	"mime"
	"net/http"

	"github.com/shipmyagent/ship/internal/netguard"
)

// withBrowserGuard keeps web pages from driving the API through the user's
// browser. A page on any site can make the browser send a request to
// 127.0.0.1 without asking anyone: a form post, a no-cors fetch, an image,
// a script; and by DNS rebinding it can even read the answers. Without a
// token nothing else would stop those requests, so on every /api route:
//
//   - without a token, only requests made on loopback are answered (from a
//     loopback address, to localhost or a loopback address): a rebinding
//     page's requests carry its own host name;
//   - a request the browser marks as coming from another origin (Origin,
//     or Sec-Fetch-Site when there is no Origin) is refused unless that
//     origin is in Options.CORSOrigins;
//   - a state-changing request must be Content-Type: application/json,
//     which no page can send to another origin without a CORS preflight.
//
// It sits inside withCORS, so an allowed origin's preflight is answered
// and its refusals carry the CORS headers it can read, and outside
// withAuth: a page that has no business here gets 403, whether or not a
// token is set.
func (s *Server) withBrowserGuard(next http.Handler) http.Handler {
	allowed := s.corsAllowed()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isAPIPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		if s.auth == nil && !netguard.Loopback(r) {
			// No token of any kind: nothing but the address and the Host
			// name tells a local program from a rebinding web page.
			writeError(w, r, http.StatusForbidden, codeForbidden,
				"the API answers only on loopback (from 127.0.0.1 or ::1, to localhost or a loopback address) while no API token (SHIP_API_TOKEN or server.tokens) is set")
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" {
			if !allowed(origin) && !netguard.OwnOrigin(r, origin) {
				writeError(w, r, http.StatusForbidden, codeForbidden,
					"refused a request from the web page at "+origin+": browsers may call the API only from the origins in server.corsOrigins")
				return
			}
		} else if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
			// A request without Origin from another page: an image, a
			// script, a no-cors fetch. Its origin is unknown, so no
			// allowed origin can vouch for it.
			writeError(w, r, http.StatusForbidden, codeForbidden,
				"refused a request a web page on another origin made without saying which (Sec-Fetch-Site: "+site+")")
			return
		}
		if changesState(r.Method) && !isJSON(r.Header.Get("Content-Type")) {
			writeError(w, r, http.StatusUnsupportedMediaType, codeUnsupportedMediaType,
				r.Method+" "+r.URL.Path+" takes only Content-Type: application/json (also with an empty body)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// changesState reports whether a request with method may change
// something: everything but the methods that only read.
func changesState(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// isJSON reports whether a Content-Type header is application/json, with
// or without parameters such as charset.
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}
