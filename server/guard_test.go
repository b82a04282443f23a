package server_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/shipclient"
	"github.com/shipmyagent/ship/server"
)

// direct sends a request to the API's handler as if it came from remote
// and was addressed to target's host: the one way to test who a request
// comes from and which name it used. An event stream that starts is
// answered 200 with no body, and hung up.
func (e *env) direct(method, remote, target, body string, header map[string]string) response {
	e.t.Helper()
	h, granted, r := e.hold(remote, method, target, body, header)
	if granted {
		h.close()
		return response{status: http.StatusOK, header: http.Header{}}
	}
	return r
}

// open sends a GET and reads the answer's body unless it is an event
// stream, which it closes at once: enough to learn whether a stream was
// granted.
func (e *env) open(path string, header map[string]string) response {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	r := response{status: resp.StatusCode, header: resp.Header}
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		r.body, _ = io.ReadAll(resp.Body)
	}
	return r
}

func TestAPIWithoutATokenAnswersOnlyOnLoopback(t *testing.T) {
	e := newEnv(t, setup{handler: fakeopenai.EchoChatSend})
	for _, tc := range []struct{ what, remote, target string }{
		{"a rebinding page reading the chats", "127.0.0.1:5555", "http://evil.example:3000/api/chats"},
		{"a rebinding page following the events", "127.0.0.1:5555", "http://evil.example:3000/api/sse"},
		{"a rebinding page following one chat", "127.0.0.1:5555", "http://evil.example:3000/api/sse/api:chat:default"},
		{"a name that resolves to loopback", "[::1]:5555", "http://localtest.me/api/status"},
		{"another machine", "192.0.2.7:5555", "http://127.0.0.1:3000/api/chats"},
	} {
		r := e.direct(http.MethodGet, tc.remote, tc.target, "", nil)
		if r.status != http.StatusForbidden || r.errorCode(t) != "FORBIDDEN" || !contains(r.message(t), "only on loopback") {
			t.Errorf("%s: %d %s, want 403 saying the API answers only on loopback", tc.what, r.status, r.body)
		}
	}
	r := e.direct(http.MethodPost, "127.0.0.1:5555", "http://evil.example:3000/api/execute", `{"instructions":"rebound"}`, nil)
	if r.status != http.StatusForbidden {
		t.Errorf("a rebinding page's turn: %d %s", r.status, r.body)
	}
	if n := e.fake.RequestCount(); n != 0 {
		t.Errorf("refused requests reached the model %d times", n)
	}
	for _, tc := range []struct{ remote, target string }{
		{"127.0.0.1:5555", "http://127.0.0.1:3000/api/chats"},
		{"[::1]:5555", "http://localhost:3000/api/chats"},
		{"127.0.0.1:5555", "http://[::1]:3000/api/chats"},
		{"127.0.0.9:5555", "http://127.1.2.3/api/chats"},
	} {
		if r := e.direct(http.MethodGet, tc.remote, tc.target, "", nil); r.status != http.StatusOK {
			t.Errorf("from %s to %s: %d %s", tc.remote, tc.target, r.status, r.body)
		}
	}
}

// With a token, a rebinding page gets no further than the token: it cannot
// know it. So the host name is not checked, and ship may sit behind a
// proxy or on a LAN name.
func TestAPIWithATokenAnswersAnyHostName(t *testing.T) {
	e := newEnv(t, setup{handler: fakeopenai.EchoChatSend, token: "tok-123"})
	r := e.direct(http.MethodGet, "192.0.2.7:5555", "http://ship.lan:3000/api/chats", "", map[string]string{"Authorization": "Bearer tok-123"})
	if r.status != http.StatusOK {
		t.Errorf("with the token from another machine: %d %s", r.status, r.body)
	}
	r = e.direct(http.MethodGet, "127.0.0.1:5555", "http://evil.example:3000/api/chats", "", map[string]string{"Origin": "http://evil.example:3000"})
	if r.status != http.StatusUnauthorized {
		t.Errorf("a rebinding page without the token: %d %s, want 401", r.status, r.body)
	}
}

// Named tokens alone are tokens too: a ship with only server.tokens
// answers its token holders from anywhere, and still nobody without one.
func TestAPIWithOnlyNamedTokensAnswersAnyHostName(t *testing.T) {
	e := newEnv(t, setup{handler: fakeopenai.EchoChatSend, opts: withCIToken})
	r := e.direct(http.MethodGet, "192.0.2.7:5555", "http://ship.lan:3000/api/chats", "", map[string]string{"Authorization": "Bearer " + ciToken})
	if r.status != http.StatusOK {
		t.Errorf("with a named token from another machine: %d %s", r.status, r.body)
	}
	r = e.direct(http.MethodGet, "192.0.2.7:5555", "http://ship.lan:3000/api/chats", "", nil)
	if r.status != http.StatusUnauthorized {
		t.Errorf("without a token from another machine: %d %s, want 401", r.status, r.body)
	}
}

func TestStateChangingRoutesTakeOnlyJSON(t *testing.T) {
	e := tasksEnv(t)
	bodies := map[string]string{
		"/api/execute":          `{"instructions":"not json typed"}`,
		"/api/send":             `{"userMessageId":"u1","message":"not json typed"}`,
		"/api/tasks/report/run": `{}`,
	}
	for path, body := range bodies {
		for _, ct := range []string{"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
			"multipart/form-data; boundary=x", "application/jsonp", "", "application/json-patch+json"} {
			r := e.request(http.MethodPost, path, []byte(body), map[string]string{"Content-Type": ct})
			if r.status != http.StatusUnsupportedMediaType || r.errorCode(t) != "UNSUPPORTED_MEDIA_TYPE" || !contains(r.message(t), "application/json") {
				t.Errorf("POST %s as %q: %d %s, want 415", path, ct, r.status, r.body)
			}
		}
		// What a no-cors fetch without a body sends: no Content-Type at all.
		if r := e.request(http.MethodPost, path, nil, nil); r.status != http.StatusUnsupportedMediaType {
			t.Errorf("POST %s without a body or a type: %d %s, want 415", path, r.status, r.body)
		}
	}
	if n := e.fake.RequestCount(); n != 0 {
		t.Fatalf("refused requests reached the model %d times", n)
	}
	for _, key := range []string{"api:chat:default", "api:chat:reports"} {
		if n := len(e.entries(key)); n != 0 {
			t.Errorf("refused requests left %d entries in %s", n, key)
		}
	}
	for _, ct := range []string{"application/json; charset=utf-8", "Application/JSON"} {
		r := e.request(http.MethodPost, "/api/execute", []byte(`{"instructions":"typed"}`), map[string]string{"Content-Type": ct})
		if res := r.result(t); !res.Success {
			t.Errorf("POST /api/execute as %q: %s", ct, r.body)
		}
	}
}

func TestBrowserRequestsFromOtherOriginsAreRefused(t *testing.T) {
	e := newEnv(t, setup{handler: fakeopenai.EchoChatSend})
	for _, h := range []map[string]string{
		{"Origin": "https://evil.example"},
		{"Origin": strings.Replace(e.srv.URL, "127.0.0.1", "localhost", 1)}, // the same server by another name
		{"Origin": "http://127.0.0.1:1"},                                    // another port is another origin
		{"Origin": "null"},                                                  // a sandboxed frame, a file
		{"Origin": "https://evil.example", "Sec-Fetch-Site": "same-origin"},
		{"Sec-Fetch-Site": "cross-site"}, // an image or a script, which send no Origin
		{"Sec-Fetch-Site": "same-site"},
	} {
		for _, path := range []string{"/api/chats", "/api/sse", "/api/status"} {
			r := e.open(path, h)
			if r.status != http.StatusForbidden || r.errorCode(t) != "FORBIDDEN" {
				t.Errorf("GET %s with %v: %d %s, want 403", path, h, r.status, r.body)
			}
		}
		if r := e.request(http.MethodPost, "/api/execute", []byte(`{"instructions":"cross"}`), h); r.status != http.StatusForbidden {
			t.Errorf("POST /api/execute with %v: %d %s, want 403", h, r.status, r.body)
		}
	}
	if n := e.fake.RequestCount(); n != 0 {
		t.Fatalf("refused requests reached the model %d times", n)
	}

	// The page's own origin (the console), a typed-in address, curl.
	for _, h := range []map[string]string{
		{"Origin": e.srv.URL},
		{"Origin": e.srv.URL, "Sec-Fetch-Site": "same-origin"},
		{"Sec-Fetch-Site": "same-origin"},
		{"Sec-Fetch-Site": "none"},
		nil,
	} {
		if r := e.request(http.MethodGet, "/api/chats", nil, h); r.status != http.StatusOK {
			t.Errorf("GET /api/chats with %v: %d %s", h, r.status, r.body)
		}
	}
	r := e.request(http.MethodPost, "/api/execute", []byte(`{"instructions":"same origin"}`), map[string]string{"Origin": e.srv.URL})
	if res := r.result(t); !res.Success {
		t.Errorf("a same-origin turn: %s", r.body)
	}
}

func TestAllowedCORSOriginsMayCallTheAPI(t *testing.T) {
	const app = "https://app.example"
	e := newEnv(t, setup{handler: fakeopenai.EchoChatSend, opts: func(o *server.Options) { o.CORSOrigins = []string{app} }})
	pre := e.request(http.MethodOptions, "/api/execute", nil, map[string]string{"Origin": app,
		"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"})
	if pre.status != http.StatusNoContent || pre.header.Get("Access-Control-Allow-Origin") != app {
		t.Fatalf("the preflight of %s: %d %v", app, pre.status, pre.header)
	}
	r := e.request(http.MethodPost, "/api/execute", []byte(`{"instructions":"from the app"}`), map[string]string{"Origin": app})
	if res := r.result(t); !res.Success || r.header.Get("Access-Control-Allow-Origin") != app {
		t.Errorf("a turn from %s: %s %v", app, r.body, r.header)
	}
	if r := e.request(http.MethodGet, "/api/chats", nil, map[string]string{"Origin": app}); r.status != http.StatusOK {
		t.Errorf("GET /api/chats from %s: %d %s", app, r.status, r.body)
	}
	// The app's mistakes come with the CORS headers, so it can read why.
	r = e.request(http.MethodPost, "/api/execute", []byte(`{"instructions":"x"}`), map[string]string{"Origin": app, "Content-Type": "text/plain"})
	if r.status != http.StatusUnsupportedMediaType || r.header.Get("Access-Control-Allow-Origin") != app {
		t.Errorf("a text/plain post from %s: %d %v", app, r.status, r.header)
	}
	if r := e.request(http.MethodGet, "/api/chats", nil, map[string]string{"Origin": "https://evil.example"}); r.status != http.StatusForbidden {
		t.Errorf("GET /api/chats from another origin: %d", r.status)
	}

	anyOrigin := newEnv(t, setup{handler: fakeopenai.EchoChatSend, opts: func(o *server.Options) { o.CORSOrigins = []string{"*"} }})
	if r := anyOrigin.request(http.MethodGet, "/api/chats", nil, map[string]string{"Origin": "https://anyone.example"}); r.status != http.StatusOK {
		t.Errorf(`GET /api/chats with corsOrigins ["*"]: %d %s`, r.status, r.body)
	}
}

// ship's own client (ship chat, ship task run) passes the guard.
func TestShipClientPassesTheBrowserGuard(t *testing.T) {
	e := tasksEnv(t)
	c, err := shipclient.New(shipclient.Options{BaseURL: e.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if id, err := c.RunTask(ctx, "report"); err != nil || id == "" {
		t.Errorf("RunTask: %q, %v", id, err)
	}
	if sum, err := c.Execute(ctx, "client", "hello", nil); err != nil || !sum.Completed {
		t.Errorf("Execute: %+v, %v", sum, err)
	}
}
