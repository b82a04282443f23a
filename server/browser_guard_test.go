package server_test

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/shipmyagent/ship/internal/browser"
)

// attackPage is a web page on another origin that tries to make a ship
// without a token work for it: a text/plain form whose body is valid JSON,
// no-cors fetches (which need no preflight), and a no-cors read.
const attackPage = `<!doctype html><meta charset="utf-8"><title>not ship</title>
<iframe name="sink"></iframe>
<form id="f" method="post" enctype="text/plain" target="sink" action="%[1]s/api/execute">
<input type="hidden" name='{"instructions":"pwn form","userId":"a' value='b"}'>
</form>
<script>
window.steps = [];
document.getElementById("f").submit();
(async () => {
  const ship = %[2]s;
  const tries = [
    ["POST", "/api/execute", JSON.stringify({instructions: "pwn fetch execute"})],
    ["POST", "/api/send", JSON.stringify({userMessageId: "pwn-1", message: "pwn fetch send"})],
    ["POST", "/api/tasks/report/run", undefined],
    ["GET", "/api/chats", undefined],
  ];
  for (const [method, path, body] of tries) {
    try {
      await fetch(ship + path, {method, mode: "no-cors", body});
      window.steps.push(path + " answered");
    } catch (e) {
      window.steps.push(path + " failed: " + e);
    }
  }
  window.done = true;
})();
</script>`

// accessLine is the server's one log line per request.
type accessLine struct {
	Message string `json:"message"`
	Method  string `json:"method"`
	Path    string `json:"path"`
	Status  int    `json:"status"`
}

// apiRequests returns the access lines of /api requests logged so far.
func apiRequests(t *testing.T, e *env) []accessLine {
	t.Helper()
	var out []accessLine
	for _, l := range strings.Split(e.logs.String(), "\n") {
		var a accessLine
		if json.Unmarshal([]byte(l), &a) == nil && a.Message == "http request" && strings.HasPrefix(a.Path, "/api/") {
			out = append(out, a)
		}
	}
	return out
}

// TestBrowserPagesOnOtherOriginsCannotDriveTheAPI is the acceptance test
// of the browser guard: a real browser opens a page served from another
// origin, which fires everything a page can send without a preflight at a
// ship that has no token. Nothing may run: the model is never called, the
// chat logs stay empty, no run event is published.
func TestBrowserPagesOnOtherOriginsCannotDriveTheAPI(t *testing.T) {
	ctx := browser.ForTest(t)
	e := tasksEnv(t)
	sub, _ := e.engine.Subscribe(nil, 0, 1024)
	defer sub.Close()

	page := fmt.Sprintf(attackPage, html.EscapeString(e.srv.URL), jsString(e.srv.URL))
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(page))
	}))
	defer attacker.Close()

	// Another port on 127.0.0.1 is another origin of the same site;
	// localhost is another site. Both are refused.
	for i, origin := range []string{attacker.URL, strings.Replace(attacker.URL, "127.0.0.1", "localhost", 1)} {
		if err := chromedp.Do(ctx, chromedp.Navigate(origin+"/")); err != nil {
			t.Fatalf("opening the page on %s: %v", origin, err)
		}
		if err := chromedp.Do(ctx, browser.Until(`window.done === true`)); err != nil {
			t.Fatalf("the page on %s: %v", origin, err)
		}
		// Each round sends 5 requests: the form and four fetches.
		want := 5 * (i + 1)
		waitFor(t, fmt.Sprintf("the %d requests of the page on %s", want, origin), func() bool { return len(apiRequests(t, e)) >= want })
	}

	for _, a := range apiRequests(t, e) {
		if a.Status != http.StatusForbidden {
			t.Errorf("%s %s from the other page: %d, want 403", a.Method, a.Path, a.Status)
		}
	}
	if n := e.fake.RequestCount(); n != 0 {
		t.Errorf("the model was called %d times for the other page", n)
	}
	for _, key := range []string{"api:chat:default", "api:chat:reports"} {
		for _, en := range e.entries(key) {
			t.Errorf("%s has a %s entry %q", key, en.Role, en.Text)
		}
	}
	select {
	case ev := <-sub.C:
		t.Errorf("a run event was published: %s (%s)", ev.Type, ev.TaskID)
	default:
	}
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
