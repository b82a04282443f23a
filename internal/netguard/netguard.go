// Package netguard holds the network rules the API and the web console
// share: what counts as a request made on loopback, and whether a
// browser's Origin names the server itself. Keeping them in one place
// keeps the two front doors from drifting apart.
package netguard

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Loopback reports whether r was made on loopback: from a loopback address
// and to a loopback host name. The host check is what keeps out a web page
// that reaches 127.0.0.1 by DNS rebinding: its requests carry the
// attacker's host name, not ours.
func Loopback(r *http.Request) bool {
	return LoopbackAddr(r.RemoteAddr) && LoopbackHost(r.Host)
}

// LoopbackAddr reports whether addr ("ip:port" or a bare IP, as in
// http.Request.RemoteAddr) is a loopback address (127.0.0.0/8 or ::1).
func LoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// LoopbackHost reports whether hostport (a Host header, with or without
// a port) names loopback: "localhost" or a loopback address. Other names
// are refused even when they resolve to 127.0.0.1, since that is what a
// rebinding attacker's name does.
func LoopbackHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	return LoopbackAddr(host)
}

// OwnOrigin reports whether origin (an Origin header's value) names the
// host r was sent to: the page that made the request was served by this
// server. The scheme is not compared, since behind a TLS-terminating
// proxy the server cannot see the scheme the browser used.
func OwnOrigin(r *http.Request, origin string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}
