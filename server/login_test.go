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
