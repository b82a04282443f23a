package main

import (
	"bytes"
	"fmt"
	"html"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/internal/browser"
)

const testToken = "t0ken-for-the-bench"

// oneChat is a chat list linking to one chat.
const oneChat = `<ul><li><a href="/chats/telegram:42">Alice</a></li></ul>`

// fakeConsole serves the console's paths the way the brief describes them:
// a login form exchanging the token for a session cookie, and pages with
// <main id="main">. /chats shows chatList.
func fakeConsole(t *testing.T, chatList string) *url.URL {
	t.Helper()
	page := func(w http.ResponseWriter, title, body string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:16px sans-serif;margin:0;background:#fff;color:#111}
@media (prefers-color-scheme: dark){body{background:#111;color:#eee}}</style>
<title>%s</title></head><body><main id="main"><h1>%s</h1>%s</main></body></html>`, html.EscapeString(title), html.EscapeString(title), body)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Log in", `<form method="post" action="/login"><input type="password" name="token"><button>Log in</button></form>`)
	})
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("token") != testToken {
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: "ship_session", Value: "ok", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		http.Redirect(w, r, "/", http.StatusSeeOther)
	})
	authed := func(title, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if c, err := r.Cookie("ship_session"); err != nil || c.Value != "ok" {
				http.Redirect(w, r, "/login", http.StatusSeeOther)
				return
			}
			page(w, title, body)
		}
	}
	mux.Handle("GET /{$}", authed("Overview", "<p>telegram: connected</p>"))
	mux.Handle("GET /chats", authed("Chats", chatList))
	mux.Handle("GET /chats/{key}", authed("Chat", "<p>hello</p>"))
	mux.Handle("GET /approvals", authed("Approvals", "<p>nothing waits</p>"))
	mux.Handle("GET /tasks", authed("Tasks", "<p>no tasks</p>"))
	mux.Handle("GET /tools", authed("Tools", "<p>shell: ask</p>"))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func testOptions(t *testing.T, base *url.URL, token string) options {
	return options{
		base:  base,
		token: token,
		// The chat page makes it look for a link on /chats; more pages would
		// only make the test slower.
		pages: splitPages("/," + firstChat + ",/tools"),
		out:   t.TempDir(),
		loads: 2,
		wait:  "#main",
	}
}

func TestRunShootsEveryPageAndReportsPaint(t *testing.T) {
	ctx := browser.ForTest(t)
	o := testOptions(t, fakeConsole(t, oneChat), testToken)
	var out bytes.Buffer
	if err := run(ctx, o, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"overview", "chat", "tools"} {
		for _, variant := range []struct {
			name  string
			width int
		}{{"desktop", 1280}, {"phone", 375}} {
			for _, scheme := range []string{"light", "dark"} {
				file := filepath.Join(o.out, fmt.Sprintf("%s-%s-%s.png", name, variant.name, scheme))
				data, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				img, err := png.Decode(bytes.NewReader(data))
				if err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				if w := img.Bounds().Dx(); w != variant.width {
					t.Errorf("%s: width %d, want %d", file, w, variant.width)
				}
			}
		}
	}
	if entries, _ := os.ReadDir(o.out); len(entries) != 12 {
		t.Errorf("%d files in -out, want 12", len(entries))
	}
	report := out.String()
	for _, path := range []string{"/", "/chats/telegram:42", "/tools"} {
		if !strings.Contains(report, "| `"+path+"` | 2 | ") {
			t.Errorf("report has no row for %s with 2 loads:\n%s", path, report)
		}
	}
	if strings.Contains(report, testToken) {
		t.Error("the report shows the token")
	}
}

func TestRunWithAWrongToken(t *testing.T) {
	ctx := browser.ForTest(t)
	o := testOptions(t, fakeConsole(t, oneChat), "not-the-t0ken")
	err := run(ctx, o, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "login refused") || strings.Contains(err.Error(), "not-the-t0ken") {
		t.Fatalf("run() error = %v, want a refused login that does not show the token", err)
	}
}

func TestRunWithoutATokenWhereOneIsNeeded(t *testing.T) {
	ctx := browser.ForTest(t)
	o := testOptions(t, fakeConsole(t, oneChat), "")
	err := run(ctx, o, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "redirected to /login") {
		t.Fatalf("run() error = %v, want one saying the console wants a login", err)
	}
}

func TestRunSkipsTheChatPageWithoutChats(t *testing.T) {
	ctx := browser.ForTest(t)
	o := testOptions(t, fakeConsole(t, "<p>No chats yet.</p>"), testToken)
	o.pages, o.loads = splitPages(firstChat+",/tools"), 1
	var out bytes.Buffer
	if err := run(ctx, o, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	shots, err := filepath.Glob(filepath.Join(o.out, "*.png"))
	if err != nil {
		t.Fatal(err)
	}
	if len(shots) != 4 || !strings.Contains(out.String(), "| `/tools` | 1 | ") || strings.Contains(out.String(), "/chats") {
		t.Errorf("screenshots %v and report:\n%s\nwant the four of /tools only", shots, out.String())
	}
}

func TestPageName(t *testing.T) {
	for path, want := range map[string]string{
		"/":                  "overview",
		"/chats":             "chats",
		"/chats/telegram:42": "chat",
		"/approvals":         "approvals",
		"/tools/":            "tools",
		"/a/b?x=1":           "a-b",
	} {
		if got := pageName(path); got != want {
			t.Errorf("pageName(%q) = %q, want %q", path, got, want)
		}
	}
}
