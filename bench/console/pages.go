package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"slices"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/shipmyagent/ship/internal/browser"
)

// stepTimeout bounds one navigation or wait, so a page that never shows its
// main element fails with its name instead of using up -timeout.
const stepTimeout = 15 * time.Second

// browserVersion is the browser's product string, e.g. "Chrome/148.0…".
func browserVersion(ctx context.Context) (string, error) {
	v, err := chromedp.CallBrowser(ctx, cdpbrowser.GetVersion, cdp.Empty{})
	if err != nil {
		return "", fmt.Errorf("reading the browser's version: %w", err)
	}
	return v.Product, nil
}

// login signs in as a person would: it types the token into the login form's
// token field and presses Enter, then checks it left /login.
func login(ctx context.Context, base *url.URL, token string) error {
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	resp, err := chromedp.Run(sctx, chromedp.NavigateResponse(base.String()+"/login"))
	if err != nil {
		return fmt.Errorf("opening /login: %w", err)
	}
	if resp.Status >= 400 {
		return fmt.Errorf("opening /login: HTTP %d", resp.Status)
	}
	field := chromedp.CSS(`input[name="token"]`)
	if err := chromedp.Do(sctx, chromedp.WaitVisible(field)); err != nil {
		return fmt.Errorf("waiting for the token field of /login: %w", err)
	}
	resp, err = chromedp.RunResponse(sctx, chromedp.SendKeys(field, token+kb.Enter))
	if err != nil {
		return fmt.Errorf("posting the login form: %w", err)
	}
	if path, err := currentPath(sctx); err != nil {
		return err
	} else if path == "/login" {
		return fmt.Errorf("login refused (HTTP %d, still on /login): is the token right?", resp.Status)
	}
	return nil
}

// currentPath is the path of the tab's current URL.
func currentPath(ctx context.Context) (string, error) {
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		return "", fmt.Errorf("reading the location: %w", err)
	}
	u, err := url.Parse(loc)
	if err != nil {
		return "", fmt.Errorf("parsing the location: %w", err)
	}
	return u.Path, nil
}

// visit loads path and waits for the selector wait (none when empty). An
// HTTP error or a redirect to the login page is an error.
func visit(ctx context.Context, base *url.URL, path, wait string) error {
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	resp, err := chromedp.Run(sctx, chromedp.NavigateResponse(base.String()+path))
	if err != nil {
		return fmt.Errorf("loading: %w", err)
	}
	if resp.Status >= 400 {
		return fmt.Errorf("loading: HTTP %d", resp.Status)
	}
	if now, err := currentPath(sctx); err != nil {
		return err
	} else if now == "/login" && path != "/login" {
		return fmt.Errorf("redirected to /login: give -token or set SHIP_API_TOKEN")
	}
	if wait != "" {
		if err := chromedp.Do(sctx, chromedp.WaitVisible(chromedp.CSS(wait))); err != nil {
			return fmt.Errorf("waiting for %s: %w", wait, err)
		}
	}
	return nil
}

// firstChatPath is the path of the first link on /chats to a chat
// (/chats/{key}), or "" when there is none.
func firstChatPath(ctx context.Context, base *url.URL) (string, error) {
	if err := visit(ctx, base, "/chats", ""); err != nil {
		return "", fmt.Errorf("page /chats: %w", err)
	}
	path, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		for (const a of document.querySelectorAll('a[href]')) {
			const u = new URL(a.getAttribute('href'), location.href);
			if (u.origin === location.origin && u.pathname.startsWith('/chats/') && u.pathname.length > '/chats/'.length) {
				return u.pathname + u.search;
			}
		}
		return '';
	})()`))
	if err != nil {
		return "", fmt.Errorf("looking for a chat link on /chats: %w", err)
	}
	return path, nil
}

// screenshots writes name-{desktop,phone}-{light,dark}.png of path to dir
// and returns the files written.
func screenshots(ctx context.Context, base *url.URL, path, name, dir, wait string) ([]string, error) {
	variants := []struct {
		name          string
		width, height int
		mobile        bool
	}{
		{"desktop", 1280, 800, false},
		{"phone", 375, 812, true},
	}
	var files []string
	for _, v := range variants {
		for _, dark := range []bool{false, true} {
			scheme := "light"
			if dark {
				scheme = "dark"
			}
			if err := chromedp.Do(ctx, browser.Viewport(v.width, v.height, v.mobile), browser.ColorScheme(dark)); err != nil {
				return files, err
			}
			if err := visit(ctx, base, path, wait); err != nil {
				return files, err
			}
			file := filepath.Join(dir, fmt.Sprintf("%s-%s-%s.png", name, v.name, scheme))
			if err := chromedp.Do(ctx, browser.Screenshot(file)); err != nil {
				return files, err
			}
			files = append(files, file)
		}
	}
	return files, nil
}

// timing is one page's first-paint figures in milliseconds from the start of
// navigation.
type timing struct {
	path        string
	fcp         []float64 // first-contentful-paint of each load
	responseEnd []float64 // navigation timing responseEnd of each load
}

// paint is what the page reports about one load.
type paint struct {
	FCP         float64 `json:"fcp"`
	ResponseEnd float64 `json:"responseEnd"`
}

// paintJS resolves with the load's first-contentful-paint, which can be
// recorded after the load event; a page with no text or image has none.
// (chromedp's Poll can run in the previous page's execution context right
// after a navigation; a promise evaluated in the current page cannot.)
const paintJS = `new Promise((resolve, reject) => {
	const read = () => {
		const p = performance.getEntriesByType('paint').find(e => e.name === 'first-contentful-paint');
		if (!p) return false;
		const n = performance.getEntriesByType('navigation')[0];
		resolve({fcp: p.startTime, responseEnd: n ? n.responseEnd : 0});
		return true;
	};
	if (read()) return;
	new PerformanceObserver(read).observe({type: 'paint', buffered: true});
	setTimeout(() => reject(new Error('no first-contentful-paint after 10 s (a page with no text or image has none)')), 10000);
})`

// measure loads path n times on a desktop viewport with the HTTP cache off
// (each load fetches everything, as a first visit does) and reads its paint
// timing. Each load starts from about:blank, so it is a fresh navigation.
func measure(ctx context.Context, base *url.URL, path string, n int) (timing, error) {
	t := timing{path: path}
	if err := chromedp.Do(ctx, browser.Viewport(1280, 800, false), browser.ColorScheme(false), setCache(false)); err != nil {
		return t, err
	}
	defer func() { _ = chromedp.Do(ctx, setCache(true)) }()
	for range n {
		if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
			return t, fmt.Errorf("loading about:blank: %w", err)
		}
		if err := visit(ctx, base, path, ""); err != nil {
			return t, err
		}
		p, err := chromedp.Run(ctx, chromedp.Evaluate[paint](paintJS, chromedp.EvalAwaitPromise))
		if err != nil {
			return t, fmt.Errorf("reading first-contentful-paint: %w", err)
		}
		t.fcp = append(t.fcp, p.FCP)
		t.responseEnd = append(t.responseEnd, p.ResponseEnd)
	}
	return t, nil
}

// setCache turns the tab's HTTP cache on or off.
func setCache(on bool) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := cdp.Call(ctx, t, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: !on}); err != nil {
			return fmt.Errorf("setting the HTTP cache: %w", err)
		}
		return nil
	})
}

// report prints the figures as a Markdown table for BENCHMARKS.md.
func report(out io.Writer, version string, rows []timing) {
	fmt.Fprintf(out, "First paint on loopback (%s, desktop 1280×800, HTTP cache off), ms from navigation start:\n\n", version)
	fmt.Fprintln(out, "| page | loads | first contentful paint, median | max | responseEnd, median |")
	fmt.Fprintln(out, "|---|---:|---:|---:|---:|")
	for _, r := range rows {
		fmt.Fprintf(out, "| `%s` | %d | %.0f | %.0f | %.1f |\n",
			r.path, len(r.fcp), median(r.fcp), slices.Max(r.fcp), median(r.responseEnd))
	}
}

// median of a non-empty list.
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
