package browser

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// page is a tiny page: a button whose click changes a text, and a background
// that follows prefers-color-scheme.
const page = `<!doctype html>
<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<style>
body { margin: 0; background: #fff; color: #000; }
@media (prefers-color-scheme: dark) { body { background: #000; color: #fff; } }
</style></head>
<body><main id="main">
<p id="msg">before</p>
<button id="go" onclick="document.getElementById('msg').textContent = 'after'">Go</button>
</main></body></html>`

// serve starts a loopback server of page that sets one HttpOnly SameSite=Strict
// cookie and one plain cookie.
func serve(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "s3cret", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		http.SetCookie(w, &http.Cookie{Name: "plain", Value: "p", Path: "/", SameSite: http.SameSiteLaxMode})
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(page))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestClickChangesText(t *testing.T) {
	srv := serve(t)
	ctx := ForTest(t)

	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL),
		chromedp.WaitVisible(chromedp.CSS("#go")),
	); err != nil {
		t.Fatal(err)
	}
	before, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#msg")))
	if err != nil {
		t.Fatal(err)
	}
	if before != "before" {
		t.Fatalf("text before the click = %q, want %q", before, "before")
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#go"))); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById('msg').textContent === 'after'`)); err != nil {
		t.Fatalf("waiting for the click to change the text: %v", err)
	}
	after, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#msg")))
	if err != nil {
		t.Fatal(err)
	}
	if after != "after" {
		t.Fatalf("text after the click = %q, want %q", after, "after")
	}
}

func TestCookiesReportAttributes(t *testing.T) {
	srv := serve(t)
	ctx := ForTest(t)

	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL), chromedp.WaitVisible(chromedp.CSS("#main"))); err != nil {
		t.Fatal(err)
	}
	cookies, err := chromedp.Run(ctx, Cookies())
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*network.Cookie{}
	for _, c := range cookies {
		byName[c.Name] = c
	}
	session, plain := byName["session"], byName["plain"]
	if session == nil || plain == nil {
		t.Fatalf("cookies = %v, want session and plain", names(cookies))
	}
	if !session.HTTPOnly || session.SameSite != network.CookieSameSiteStrict {
		t.Errorf("session cookie: HttpOnly=%v SameSite=%q, want true and Strict", session.HTTPOnly, session.SameSite)
	}
	if plain.HTTPOnly || plain.SameSite != network.CookieSameSiteLax {
		t.Errorf("plain cookie: HttpOnly=%v SameSite=%q, want false and Lax", plain.HTTPOnly, plain.SameSite)
	}
	// What the page's own scripts see: the HttpOnly cookie is hidden.
	jsCookies, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.cookie`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(jsCookies, "session") || !strings.Contains(jsCookies, "plain=p") {
		t.Errorf("document.cookie = %q, want plain=p and no session", jsCookies)
	}
}

func names(cookies []*network.Cookie) []string {
	var out []string
	for _, c := range cookies {
		out = append(out, c.Name)
	}
	return out
}

func TestPhoneViewportColorSchemeAndScreenshot(t *testing.T) {
	srv := serve(t)
	ctx := ForTest(t)
	dir := t.TempDir()

	for _, dark := range []bool{false, true} {
		if err := chromedp.Do(ctx,
			Viewport(375, 812, true),
			ColorScheme(dark),
			chromedp.Navigate(srv.URL),
			chromedp.WaitVisible(chromedp.CSS("#main")),
		); err != nil {
			t.Fatal(err)
		}
		matches, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`matchMedia('(prefers-color-scheme: dark)').matches`))
		if err != nil {
			t.Fatal(err)
		}
		if matches != dark {
			t.Errorf("dark=%v: prefers-color-scheme: dark matches = %v", dark, matches)
		}
		width, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.innerWidth`))
		if err != nil {
			t.Fatal(err)
		}
		if width != 375 {
			t.Errorf("innerWidth = %d, want 375", width)
		}

		path := filepath.Join(dir, "page.png")
		if err := chromedp.Do(ctx, Screenshot(path)); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("the screenshot is not a PNG: %v", err)
		}
		if w := img.Bounds().Dx(); w != 375 {
			t.Errorf("screenshot width = %d, want 375", w)
		}
		// The page's background, far from the text: black in dark, white in light.
		r, g, b, _ := img.At(img.Bounds().Dx()-2, img.Bounds().Dy()-2).RGBA()
		if bright := r > 0x8000 && g > 0x8000 && b > 0x8000; bright == dark {
			t.Errorf("dark=%v: background pixel = %04x %04x %04x", dark, r, g, b)
		}
	}
}

func TestCancelRemovesTempFiles(t *testing.T) {
	// Not t.TempDir: Chromium's singleton socket path must stay under the
	// 108 bytes of a Unix socket address, and t.TempDir's paths are long.
	tmp, err := os.MkdirTemp("", "bt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	t.Setenv("TMPDIR", tmp)
	ctx, cancel, err := Launch(context.Background())
	if errors.Is(err, ErrNotFound) && os.Getenv(EnvRequire) != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		cancel()
		t.Fatal(err)
	}
	running := entries(t, tmp)
	cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err == nil {
		t.Error("the browser still answers after cancel")
	}
	if left := entries(t, tmp); len(left) != 0 {
		t.Errorf("left in TMPDIR after cancel: %v (while running: %v)", left, running)
	}
}

// entries lists the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	list, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list {
		out = append(out, e.Name())
	}
	return out
}

func TestFind(t *testing.T) {
	t.Run("SHIP_CHROMIUM names a missing program", func(t *testing.T) {
		t.Setenv(EnvChromium, filepath.Join(t.TempDir(), "no-such-chromium"))
		_, err := Find()
		if err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), EnvChromium) {
			t.Fatalf("Find() error = %v, want one naming %s and not ErrNotFound", err, EnvChromium)
		}
	})
	t.Run("nothing on PATH", func(t *testing.T) {
		t.Setenv(EnvChromium, "")
		t.Setenv("PATH", t.TempDir())
		_, err := Find()
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "apt-get install chromium") {
			t.Fatalf("Find() error = %v, want ErrNotFound saying what to install", err)
		}
	})
	t.Run("SHIP_CHROMIUM wins over PATH", func(t *testing.T) {
		dir := t.TempDir()
		fake := filepath.Join(dir, "my-chrome")
		if err := os.WriteFile(fake, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		t.Setenv(EnvChromium, fake)
		got, err := Find()
		if err != nil || got != fake {
			t.Fatalf("Find() = %q, %v; want %q", got, err, fake)
		}
	})
}

// recorder is a testing.TB that records how ForTest ended the test.
type recorder struct {
	testing.TB
	mu              sync.Mutex
	skipped, failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Skipf(format string, args ...any) {
	r.mu.Lock()
	r.skipped = format
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.failed = format
	r.mu.Unlock()
	runtime.Goexit()
}

func TestForTestWithoutBrowser(t *testing.T) {
	t.Setenv(EnvChromium, "")
	t.Setenv("PATH", t.TempDir())
	for _, require := range []string{"", "1"} {
		t.Setenv(EnvRequire, require)
		r := &recorder{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			ForTest(r)
		}()
		<-done
		r.mu.Lock()
		skipped, failed := r.skipped != "", r.failed != ""
		r.mu.Unlock()
		if want := require != "1"; skipped != want || failed == want {
			t.Errorf("%s=%q: skipped=%v failed=%v, want skipped=%v failed=%v", EnvRequire, require, skipped, failed, want, !want)
		}
	}
}

func TestLaunchReportsABrowserThatDoesNotStart(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "broken-chrome")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'missing libnss3.so' >&2\nexit 127\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvChromium, fake)
	_, _, err := Launch(context.Background())
	if err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "missing libnss3.so") {
		t.Fatalf("Launch() error = %v, want the browser's own message", err)
	}
}
