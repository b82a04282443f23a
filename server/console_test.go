package server_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/media"
	"github.com/shipmyagent/ship/server"
)

const consoleToken = "console-test-token-98765"

func withConsole(o *server.Options) { o.Console = true }

// consoleClient is a browser stand-in: it keeps cookies and does not
// follow redirects, so each answer can be checked.
func consoleClient(t *testing.T, e *env) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := *e.srv.Client()
	c.Jar = jar
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

func send(t *testing.T, c *http.Client, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func get(t *testing.T, c *http.Client, e *env, path string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
	return send(t, c, req)
}

func postForm(t *testing.T, c *http.Client, e *env, path string, form url.Values, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return send(t, c, req)
}

// csrfRE finds the token in the page's hx-headers attribute, where the
// quotes of its JSON are escaped.
var csrfRE = regexp.MustCompile(`X-CSRF-Token&#34;: &#34;([0-9a-f]{64})&#34;`)

func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token in the page:\n%s", page)
	}
	return m[1]
}

func TestConsoleLoginExchangesTheTokenForAStrictHttpOnlyCookie(t *testing.T) {
	e := newEnv(t, setup{handler: fakeopenai.EchoChatSend, token: consoleToken, opts: withConsole})
	c := consoleClient(t, e)

	resp, _ := get(t, c, e, "/chats")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login?next=%2Fchats" {
		t.Fatalf("a page without a session: %d to %q; want the login page", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, body := postForm(t, c, e, "/login?next=%2Fchats", url.Values{"token": {"wrong"}}, nil)
	if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 || !strings.Contains(body, "not the API token") {
		t.Fatalf("a wrong token: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	resp, _ = postForm(t, c, e, "/login?next=%2Fchats", url.Values{"token": {consoleToken}}, nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/chats" {
		t.Fatalf("the right token: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	ck := resp.Cookies()
	if len(ck) != 1 || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode || ck[0].Value == consoleToken {
		t.Fatalf("session cookie %+v: want one HttpOnly, SameSite=Strict cookie that is not the token", ck)
	}
	resp, body = get(t, c, e, "/")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "<h1>Overview</h1>") {
		t.Fatalf("the overview after login: %d\n%s", resp.StatusCode, body)
	}
	for _, secret := range []string{consoleToken, testModelKey} {
		if strings.Contains(body, secret) {
			t.Errorf("the overview shows a secret %q", secret)
		}
	}
	// The API still wants its bearer token: the cookie is the console's.
	resp, _ = get(t, c, e, "/api/status")
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/api/status with the console's cookie: %d, want 401", resp.StatusCode)
	}
	// Logged out, the cookie no longer works.
	_, page := get(t, c, e, "/")
	postForm(t, c, e, "/logout", url.Values{"csrf": {csrfOf(t, page)}}, nil)
	if resp, _ := get(t, c, e, "/"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("after logout: %d, want a redirect to the login page", resp.StatusCode)
	}
}

func TestConsoleRefusesAPostWithoutTheCSRFToken(t *testing.T) {
	e := newEnv(t, setup{handler: fakeopenai.EchoChatSend, opts: withConsole})
	c := consoleClient(t, e)
	_, page := get(t, c, e, "/chats/api:chat:console")
	form := url.Values{"chat": {"api:chat:console"}, "text": {"hello from the console"}}

	resp, body := postForm(t, c, e, "/console/send", form, nil)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "CSRF") {
		t.Fatalf("send without the CSRF token: %d %q", resp.StatusCode, body)
	}
	resp, _ = postForm(t, c, e, "/console/send", form, map[string]string{"X-CSRF-Token": strings.Repeat("0", 64)})
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("send with a wrong CSRF token: %d", resp.StatusCode)
	}
	if n := len(e.entries("api:chat:console")); n != 0 {
		t.Fatalf("refused sends logged %d entries", n)
	}
	resp, body = postForm(t, c, e, "/console/send", form, map[string]string{"X-CSRF-Token": csrfOf(t, page)})
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("send with the token: %d %q", resp.StatusCode, body)
	}
	waitFor(t, "the reply in the console chat", func() bool {
		for _, en := range e.entries("api:chat:console") {
			if en.Role == "assistant" && strings.Contains(en.Text, "hello from the console") {
				return true
			}
		}
		return false
	})
	// A form posted from another site is refused even with a token.
	resp, _ = postForm(t, c, e, "/console/send", form, map[string]string{"X-CSRF-Token": csrfOf(t, page), "Origin": "https://evil.example"})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site post: %d", resp.StatusCode)
	}
	// Only api chats take messages from the console.
	resp, _ = postForm(t, c, e, "/console/send", url.Values{"chat": {"telegram:chat:1"}, "text": {"x"}}, map[string]string{"X-CSRF-Token": csrfOf(t, page)})
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("send into a telegram chat: %d", resp.StatusCode)
	}
}

func TestConsoleWithoutATokenAnswersOnlyOnLoopback(t *testing.T) {
	e := newEnv(t, setup{handler: fakeopenai.EchoChatSend, opts: withConsole})
	h := e.api.Handler()
	for _, tc := range []struct{ remote, host string }{
		{"192.0.2.7:5555", "127.0.0.1:8080"}, // from another machine
		{"127.0.0.1:5555", "evil.example"},   // a page that rebound a name to 127.0.0.1
	} {
		req := httptest.NewRequest(http.MethodGet, "http://"+tc.host+"/", nil)
		req.RemoteAddr = tc.remote
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden || strings.Contains(rec.Body.String(), "Overview") {
			t.Errorf("from %s to %s: %d", tc.remote, tc.host, rec.Code)
		}
	}
	req := httptest.NewRequest(http.MethodGet, "http://localhost:8080/", nil)
	req.RemoteAddr = "[::1]:5555"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf("on loopback: %d", rec.Code)
	}
}

func TestConsoleShowsWhatChatUsersWroteAsText(t *testing.T) {
	e := newEnv(t, setup{handler: fakeopenai.EchoChatSend, opts: withConsole})
	evil := `<script>document.title="owned"</script><img src=x onerror=alert(1)>`
	e.execute(map[string]any{"instructions": evil, "chatId": "x"}).result(t)
	c := consoleClient(t, e)
	for _, path := range []string{"/chats/api:chat:x", "/chats?q=script", "/console/entries?chat=api:chat:x", "/chats"} {
		resp, body := get(t, c, e, path)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		if strings.Contains(body, "<script>document") || strings.Contains(body, "<img src=x") {
			t.Errorf("%s renders the user's markup as HTML", path)
		}
		if !strings.Contains(body, "&lt;script&gt;document.title=") {
			t.Errorf("%s does not show the message as text", path)
		}
	}
	resp, _ := get(t, c, e, "/chats/api:chat:x")
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
}

func TestConsoleOffLeavesOnlyTheAPI(t *testing.T) {
	e := newEnv(t, setup{handler: fakeopenai.EchoChatSend})
	if r := e.get("/"); r.status != http.StatusNotFound {
		t.Errorf("GET / with the console off: %d", r.status)
	}
	if r := e.get("/health"); r.status != http.StatusOK {
		t.Errorf("/health: %d", r.status)
	}
}

func TestConsoleServesOnlyReceivedFiles(t *testing.T) {
	dir := t.TempDir()
	png := []byte("\x89PNG\r\n\x1a\n fake image")
	if err := os.MkdirAll(filepath.Join(dir, ".ship", "files", "api_chat_x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".ship", "files", "api_chat_x", "1-photo.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ship.json"), []byte(`{"secret": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, setup{handler: fakeopenai.EchoChatSend, dir: dir, opts: func(o *server.Options) { o.Console = true; o.Files = media.NewStore(dir, 0) }})
	c := consoleClient(t, e)
	resp, body := get(t, c, e, "/console/files?path="+url.QueryEscape(".ship/files/api_chat_x/1-photo.png"))
	if resp.StatusCode != http.StatusOK || body != string(png) || resp.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("a received image: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	for _, p := range []string{"../../etc/passwd", ".ship/files/../../ship.json", "ship.json", ".ship/files/api_chat_x/../../../ship.json"} {
		if resp, _ := get(t, c, e, "/console/files?path="+url.QueryEscape(p)); resp.StatusCode != http.StatusNotFound {
			t.Errorf("file %q: %d", p, resp.StatusCode)
		}
	}
}

func TestConsoleOverviewCountsTheLastHoursTurns(t *testing.T) {
	e := newEnv(t, setup{handler: fakeopenai.EchoChatSend, opts: withConsole})
	c := consoleClient(t, e)
	turns := func() string {
		_, body := get(t, c, e, "/")
		_, after, _ := strings.Cut(body, "<dt>Turns</dt><dd><span class=\"num\">")
		n, _, _ := strings.Cut(after, "<")
		return n
	}
	if n := turns(); n != "0" {
		t.Fatalf("turns before any message: %q", n)
	}
	e.execute(map[string]any{"instructions": "one", "chatId": "a"}).result(t)
	e.execute(map[string]any{"instructions": "two", "chatId": "b"}).result(t)
	waitFor(t, "two turns on the overview", func() bool { return turns() == "2" })
	_, body := get(t, c, e, "/")
	if !strings.Contains(body, "openai/m-fast") || !strings.Contains(body, "(since start)") {
		t.Errorf("the overview lacks the models or says the count is not an hour yet")
	}
}

func TestConsoleRefusesAMessageThatIsNotUTF8(t *testing.T) {
	e := newEnv(t, setup{handler: fakeopenai.EchoChatSend, opts: withConsole})
	c := consoleClient(t, e)
	_, page := get(t, c, e, "/chats/api:chat:console")
	csrf := map[string]string{"X-CSRF-Token": csrfOf(t, page)}
	for name, form := range map[string]url.Values{
		"text": {"chat": {"api:chat:console"}, "text": {"caf\xe9 au lait"}},
		"chat": {"chat": {"api:chat:caf\xe9"}, "text": {"hello"}},
	} {
		resp, body := postForm(t, c, e, "/console/send", form, csrf)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "UTF-8") {
			t.Errorf("%s not UTF-8: %d %q, want 400 saying so", name, resp.StatusCode, body)
		}
	}
	// A body that is not even a form (a stray % escape) is the sender's
	// mistake too.
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/console/send", strings.NewReader("chat=api:chat:console&text=100%"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-CSRF-Token", csrf["X-CSRF-Token"])
	if resp, body := send(t, c, req); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a malformed form: %d %q, want 400", resp.StatusCode, body)
	}
	if n := len(e.entries("api:chat:console")); n != 0 {
		t.Errorf("refused messages left %d entries in the console chat", n)
	}
	if n := e.fake.RequestCount(); n != 0 {
		t.Errorf("refused messages reached the model %d times", n)
	}
}

// An approval's command and who asked are shown on the console with bidi
// and invisible characters escaped: a U+202E would otherwise make the
// page read differently from what would run.
func TestConsoleApprovalsShowBidiControlsEscaped(t *testing.T) {
	e := shellEnv(t, `{"roles": {"anon": {"members": ["api:anonymous"], "allow": ["exec_shell"], "requireApproval": ["exec_shell"]}}}`,
		setup{opts: withConsole})
	e.ask(map[string]any{"instructions": "run: echo \u202etxt.exe"}, nil)
	c := consoleClient(t, e)
	resp, page := get(t, c, e, "/approvals")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/approvals: %d", resp.StatusCode)
	}
	if !strings.Contains(page, `echo \u202etxt.exe`) {
		t.Errorf("the approvals page does not show the command with U+202E escaped:\n%s", page)
	}
	if strings.ContainsRune(page, '\u202e') {
		t.Error("the approvals page carries a raw U+202E")
	}
}
