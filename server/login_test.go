package server_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeclock"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/server"
)

// from sends req to the server's handler as if it came from addr, so
// tests can play several clients (httptest's own client is always
// 127.0.0.1).
func (e *env) from(addr string, req *http.Request) *httptest.ResponseRecorder {
	req.RemoteAddr = addr
	rec := httptest.NewRecorder()
	e.api.Handler().ServeHTTP(rec, req)
	return rec
}

func loginRequest(next, token string) *http.Request {
	target := "/login"
	if next != "" {
		target += "?next=" + next
	}
	req := httptest.NewRequest(http.MethodPost, target, strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return req
}

func TestLoginRedirectsOnlyToCleanPathsOfThisSite(t *testing.T) {
	e := newEnv(t, setup{handler: fakeopenai.EchoChatSend, token: consoleToken, opts: withConsole})
	for _, tc := range []struct{ next, want string }{
		{"%2Fchats", "/chats"},
		{"%2Fchats%2Fapi%3Achat%3Aconsole", "/chats/api:chat:console"},
		{"%2Ftools%3Fuser%3Dtelegram%3A1", "/tools?user=telegram:1"},
		{"", "/"},
		{"/%09/evil.example", "/"},   // a tab browsers strip: //evil.example
		{"/%0a/evil.example", "/"},   // a newline, likewise
		{"/%0d/evil.example", "/"},   // a carriage return
		{"%2F%2Fevil.example", "/"},  // protocol-relative
		{"%2F%5Cevil.example", "/"},  // /\ is // to browsers
		{"%5C%5Cevil.example", "/"},  // \\ likewise
		{"/%2509/evil.example", "/"}, // a tab once decoded further
		{"/%252F/evil.example", "/"}, // //evil.example once decoded further
		{"https%3A%2F%2Fevil.example", "/"},
		{"javascript%3Aalert(1)", "/"},
		{"evil.example", "/"},
		{"/%20/evil.example", "/"},       // whitespace
		{"%20%2F%2Fevil.example", "/"},   // leading space
		{"/%00/evil.example", "/"},       // NUL
		{"/%7F", "/"},                    // DEL
		{"/%C2%85/evil.example", "/"},    // NEL, a C1 control
		{"/%E2%80%AE/gro.live", "/"},     // right-to-left override
		{"/%E3%80%80/evil.example", "/"}, // ideographic space
		{"/chats%5Cx", "/"},
		{"/%FF", "/"}, // not UTF-8
	} {
		rec := e.from("192.0.2.10:5000", loginRequest(tc.next, consoleToken))
		if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != tc.want {
			t.Errorf("next=%s: %d to %q, want a redirect to %q", tc.next, rec.Code, rec.Header().Get("Location"), tc.want)
		}
	}
}

func TestWrongLoginsLockOutOnlyTheirOwnAddress(t *testing.T) {
	e := newEnv(t, setup{handler: fakeopenai.EchoChatSend, token: consoleToken, opts: withConsole})
	const guesser, owner = "192.0.2.66:4000", "198.51.100.7:4000"
	for i := range 10 {
		if rec := e.from(guesser, loginRequest("", "guess")); rec.Code != http.StatusUnauthorized {
			t.Fatalf("wrong token #%d: %d, want 401", i+1, rec.Code)
		}
	}
	rec := e.from(guesser, loginRequest("", "guess"))
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), "wait") {
		t.Errorf("the 11th guess: %d, Retry-After %q, body %q; want 429 that says to wait",
			rec.Code, rec.Header().Get("Retry-After"), rec.Body.String())
	}
	// The right token from the guessing address is refused too: a guesser
	// must not learn that a guess was right while throttled.
	if rec := e.from(guesser, loginRequest("", consoleToken)); rec.Code != http.StatusTooManyRequests {
		t.Errorf("the right token from the throttled address: %d, want 429", rec.Code)
	}
	// Everyone else signs in as usual.
	if rec := e.from(owner, loginRequest("", consoleToken)); rec.Code != http.StatusSeeOther || len(rec.Result().Cookies()) != 1 {
		t.Errorf("the right token from another address: %d, cookies %v; want a session", rec.Code, rec.Result().Cookies())
	}
}

func TestWrongBearerTokensAreThrottledPerAddress(t *testing.T) {
	e := newEnv(t, setup{handler: fakeopenai.EchoChatSend, token: consoleToken, opts: withConsole})
	const guesser, owner = "[2001:db8:1:2::66]:4000", "198.51.100.7:4000"
	status := func(addr, token string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "/api/status", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		return e.from(addr, req)
	}
	for i := range 10 {
		if rec := status(guesser, "guess"); rec.Code != http.StatusUnauthorized {
			t.Fatalf("wrong token #%d: %d, want 401", i+1, rec.Code)
		}
	}
	rec := status(guesser, "guess")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" ||
		!strings.Contains(rec.Body.String(), `"code":"RATE_LIMITED"`) {
		t.Fatalf("the 11th guess: %d, Retry-After %q, body %s; want 429 RATE_LIMITED", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	if rec := status(guesser, consoleToken); rec.Code != http.StatusTooManyRequests {
		t.Errorf("the right token from the throttled address: %d, want 429", rec.Code)
	}
	// Another address of the same /64 shares the guesser's allowance.
	if rec := status("[2001:db8:1:2::67]:4000", consoleToken); rec.Code != http.StatusTooManyRequests {
		t.Errorf("the right token from the guesser's /64: %d, want 429", rec.Code)
	}
	if rec := status(owner, consoleToken); rec.Code != http.StatusOK {
		t.Errorf("the right token from another address: %d, want 200", rec.Code)
	}
	// The console's login and the API share one allowance: the guesser
	// cannot double its guesses by using both.
	if rec := e.from(guesser, loginRequest("", consoleToken)); rec.Code != http.StatusTooManyRequests {
		t.Errorf("a login from the address the API throttled: %d, want 429", rec.Code)
	}
}

func TestAHeldBackAddressMayTryAgainAfterAMinute(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	e := newEnv(t, setup{handler: fakeopenai.EchoChatSend, token: consoleToken, opts: func(o *server.Options) {
		o.Console = true
		o.Now = clock.Now
	}})
	const guesser = "192.0.2.66:4000"
	for range 10 {
		e.from(guesser, loginRequest("", "guess"))
	}
	rec := e.from(guesser, loginRequest("", consoleToken))
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "60" {
		t.Fatalf("held back: %d, Retry-After %q; want 429 and 60", rec.Code, rec.Header().Get("Retry-After"))
	}
	clock.Advance(time.Minute)
	if rec := e.from(guesser, loginRequest("", consoleToken)); rec.Code != http.StatusSeeOther {
		t.Errorf("a minute later, the right token: %d, want a session", rec.Code)
	}
}
