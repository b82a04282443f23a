package fakemcp

import (
	"net/http"
	"net/http/httptest"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPOptions configure StartHTTP.
type HTTPOptions struct {
	Options
	// RequireHeader, when set, makes every request without the header
	// RequireHeader: RequireValue fail with 401.
	RequireHeader, RequireValue string
}

// HTTP is the fake served over streamable HTTP on 127.0.0.1.
type HTTP struct {
	*Server
	// URL is the MCP endpoint.
	URL string
	srv *httptest.Server

	mu   sync.Mutex
	down bool
	hits int
}

// StartHTTP serves the fake over streamable HTTP. Its crash tool drops
// every client connection (the HTTP form of a server dying mid-call),
// unless opts.Crash says otherwise.
func StartHTTP(opts HTTPOptions) *HTTP {
	h := &HTTP{}
	if opts.Crash == nil {
		opts.Crash = func() { h.srv.CloseClientConnections() }
	}
	h.Server = New(opts.Options)
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return h.Server.Server }, nil)
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		down := h.down
		h.hits++
		h.mu.Unlock()
		switch {
		case down:
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		case opts.RequireHeader != "" && r.Header.Get(opts.RequireHeader) != opts.RequireValue:
			http.Error(w, "unauthorized", http.StatusUnauthorized)
		default:
			mcpHandler.ServeHTTP(w, r)
		}
	}))
	h.URL = h.srv.URL + "/mcp"
	return h
}

// SetDown makes every request fail with 503 (down) or be served again, and
// drops the open connections, so a client notices at once.
func (h *HTTP) SetDown(down bool) {
	h.mu.Lock()
	h.down = down
	h.mu.Unlock()
	if down {
		h.srv.CloseClientConnections()
	}
}

// Hits counts the HTTP requests the fake received.
func (h *HTTP) Hits() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hits
}

// Close stops the server.
func (h *HTTP) Close() {
	h.gates.stopWaiting()
	h.srv.CloseClientConnections()
	h.srv.Close()
}
