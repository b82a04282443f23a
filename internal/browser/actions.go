package browser

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// Viewport sets the tab's viewport to width×height CSS pixels at scale 1.
// mobile turns on mobile emulation (meta viewport, overlay scrollbars) and
// touch, as a phone would have.
func Viewport(width, height int, mobile bool) chromedp.Action[chromedp.Void] {
	opts := []chromedp.EmulateViewportOption{chromedp.EmulatePortrait}
	if width > height {
		opts[0] = chromedp.EmulateLandscape
	}
	if mobile {
		opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateTouch)
	}
	return chromedp.EmulateViewport(int64(width), int64(height), opts...)
}

// ColorScheme makes the tab's CSS see prefers-color-scheme: dark (dark) or
// light, whatever the machine's setting.
func ColorScheme(dark bool) chromedp.Action[chromedp.Void] {
	scheme := "light"
	if dark {
		scheme = "dark"
	}
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
		})
		if err != nil {
			return fmt.Errorf("emulating prefers-color-scheme %s: %w", scheme, err)
		}
		return nil
	})
}

// Screenshot writes a PNG of the whole page, beyond the viewport, to path.
func Screenshot(path string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		// Quality 100 is what makes FullScreenshot produce a PNG.
		png, err := chromedp.FullScreenshot(100)(ctx, t)
		if err != nil {
			return fmt.Errorf("taking a screenshot: %w", err)
		}
		if err := os.WriteFile(path, png, 0o644); err != nil {
			return fmt.Errorf("writing the screenshot: %w", err)
		}
		return nil
	})
}

// Cookies returns the browser's cookies for the tab's current page (its URL
// and those of its frames), with their HttpOnly and SameSite attributes.
func Cookies() chromedp.Action[[]*network.Cookie] {
	return func(ctx context.Context, t *chromedp.Target) ([]*network.Cookie, error) {
		res, err := cdp.Call(ctx, t, network.GetCookies, network.GetCookiesParams{})
		if err != nil {
			return nil, fmt.Errorf("reading the page's cookies: %w", err)
		}
		return res.Cookies, nil
	}
}

// Until waits until the JavaScript expression expr is true in the tab,
// asking every 20 ms until ctx ends. Unlike chromedp.Poll it lives through
// a navigation: right after one, the page's execution context may be gone
// ("Inspected target navigated or closed") until the new page's is up, and
// Until simply asks again.
func Until(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		var last error
		for {
			ok, err := chromedp.Evaluate[bool](expr)(ctx, t)
			if err == nil && ok {
				return nil
			}
			last = err
			select {
			case <-ctx.Done():
				if last != nil {
					return fmt.Errorf("waiting for %s: %w (last error: %v)", expr, ctx.Err(), last)
				}
				return fmt.Errorf("waiting for %s: %w", expr, ctx.Err())
			case <-tick.C:
			}
		}
	})
}
