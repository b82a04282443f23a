package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/shipmyagent/ship/internal/netguard"
	"github.com/shipmyagent/ship/server/internal/throttle"
)

// Session settings. A session lives in memory: a restart asks for the
// token again, which is the safe side for a tool that can approve calls.
const (
	sessionCookie = "ship_console"
	sessionTTL    = 12 * time.Hour
	maxSessions   = 1000
	csrfHeader    = "X-CSRF-Token"
	csrfField     = "csrf"
)

// session is one signed-in browser.
type session struct {
	id      string
	csrf    string
	expires time.Time
}

type sessions struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[string]*session
}

func newSessions(now func() time.Time) *sessions {
	return &sessions{now: now, m: make(map[string]*session)}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails on Go's platforms (it aborts instead)
	return hex.EncodeToString(b)
}

// create starts a session. At the cap, the session closest to expiry
// makes room: a flood of logins cannot grow memory without bound.
func (s *sessions) create() *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for id, ss := range s.m {
		if !now.Before(ss.expires) {
			delete(s.m, id)
		}
	}
	if len(s.m) >= maxSessions {
		var oldest *session
		for _, ss := range s.m {
			if oldest == nil || ss.expires.Before(oldest.expires) {
				oldest = ss
			}
		}
		delete(s.m, oldest.id)
	}
	ss := &session{id: randomHex(32), csrf: randomHex(32), expires: now.Add(sessionTTL)}
	s.m[ss.id] = ss
	return ss
}

func (s *sessions) get(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.m[id]
	if !ok {
		return nil
	}
	if !s.now().Before(ss.expires) {
		delete(s.m, id)
		return nil
	}
	return ss
}

func (s *sessions) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}

type sessionKey struct{}

func sessionFrom(ctx context.Context) *session {
	ss, _ := ctx.Value(sessionKey{}).(*session)
	return ss
}

// local refuses, when no token is set, any request not made on loopback:
// from a loopback address and to a loopback host name. The host check
// keeps a web page out that reaches 127.0.0.1 by DNS rebinding.
func (c *Console) local(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.opts.Token == "" && !netguard.Loopback(r) {
			plain(w, http.StatusForbidden, "The console answers only on loopback (127.0.0.1) while SHIP_API_TOKEN is not set.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// guard admits a request with a live session (without a token, every
// loopback request gets one) and, for a state-changing request, its
// session's CSRF token from the X-CSRF-Token header or the csrf field.
func (c *Console) guard(h http.HandlerFunc, changes bool) http.Handler {
	return c.local(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ss *session
		if ck, err := r.Cookie(sessionCookie); err == nil {
			ss = c.sessions.get(ck.Value)
		}
		if ss == nil {
			if c.opts.Token != "" || changes {
				c.unauthorized(w, r)
				return
			}
			ss = c.sessions.create()
			setSessionCookie(w, r, ss)
		}
		if changes && !sameOrigin(r) {
			plain(w, http.StatusForbidden, "Refused: the request came from another site.")
			return
		}
		if changes && !readForm(w, r) {
			return
		}
		if changes && !validCSRF(r, ss.csrf) {
			plain(w, http.StatusForbidden, "Refused: the request is missing the console's CSRF token. Reload the page and try again.")
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, ss)))
	}))
}

// unauthorized sends a page view to the login page and answers anything
// else (fragments, event streams, posts) with 401.
func (c *Console) unauthorized(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.Header.Get("HX-Request") == "" && !strings.HasPrefix(r.URL.Path, "/console/") {
		http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return
	}
	if r.Header.Get("HX-Request") == "true" {
		w.Header().Set("HX-Redirect", "/login") // the session ended while the page was open
	}
	plain(w, http.StatusUnauthorized, "Not signed in to the console: open /login.")
}

func setSessionCookie(w http.ResponseWriter, r *http.Request, ss *session) {
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: ss.id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https", MaxAge: int(sessionTTL / time.Second),
	})
}

func validCSRF(r *http.Request, want string) bool {
	got := r.Header.Get(csrfHeader)
	if got == "" {
		got = r.PostFormValue(csrfField)
	}
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// sameOrigin refuses a request a browser says came from another origin;
// requests without Origin (old browsers, curl) rely on the CSRF token.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" || o == "null" && r.Header.Get("Sec-Fetch-Site") == "same-origin" {
		return true
	}
	return netguard.OwnOrigin(r, o)
}

func (c *Console) handleLoginPage(w http.ResponseWriter, r *http.Request) {
	if c.opts.Token == "" {
		http.Redirect(w, r, "/", http.StatusSeeOther) // nothing to sign in to
		return
	}
	c.renderLogin(w, r, http.StatusOK, "")
}

// handleLogin exchanges the API token for a session cookie. Wrong tokens
// are counted per address (with the API's), and an address that used its
// allowance up is refused for a while even with the right token, so a
// guesser never learns it guessed right; people elsewhere sign in as usual.
func (c *Console) handleLogin(w http.ResponseWriter, r *http.Request) {
	if c.opts.Token == "" {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	if !sameOrigin(r) {
		plain(w, http.StatusForbidden, "Refused: the request came from another site.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	got := sha256.Sum256([]byte(strings.TrimSpace(r.PostFormValue("token"))))
	want := sha256.Sum256([]byte(c.opts.Token))
	ok := subtle.ConstantTimeCompare(got[:], want[:]) == 1
	addr := throttle.Key(r.RemoteAddr)
	wait, held := c.logins.Check(addr, ok)
	if held {
		c.log.Warn().Str("remote", addr).Msg("too many wrong console logins from one address: it is held back for a minute")
	}
	if wait > 0 {
		secs := throttle.RetryAfter(wait)
		w.Header().Set("Retry-After", secs)
		c.renderLogin(w, r, http.StatusTooManyRequests,
			"Too many wrong tokens from your address; wait "+secs+" seconds and try again.")
		return
	}
	if !ok {
		c.log.Warn().Str("remote", r.RemoteAddr).Msg("console login with a wrong token")
		c.renderLogin(w, r, http.StatusUnauthorized, "That is not the API token (SHIP_API_TOKEN).")
		return
	}
	ss := c.sessions.create()
	setSessionCookie(w, r, ss)
	http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
}

// maxNext bounds the path a login returns to; the console's own are short.
const maxNext = 2048

// safeNext keeps the redirect after login on this site: a path that
// starts with one "/", with no backslash, whitespace, control or format
// character, as given and once more percent-decoded. Anything else goes
// to "/". Browsers drop tabs and newlines inside a URL and read "\" as
// "/", so "/\t/evil.example" or "/\evil.example" would leave the site.
func safeNext(next string) string {
	if len(next) > maxNext || !cleanPath(next) {
		return "/"
	}
	decoded, err := url.PathUnescape(next)
	if err != nil || !cleanPath(decoded) {
		return "/"
	}
	return next
}

func cleanPath(p string) bool {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || !utf8.ValidString(p) {
		return false
	}
	return !strings.ContainsFunc(p, func(r rune) bool {
		return r == '\\' || unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
	})
}

func (c *Console) handleLogout(w http.ResponseWriter, r *http.Request) {
	if ss := sessionFrom(r.Context()); ss != nil {
		c.sessions.end(ss.id)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
