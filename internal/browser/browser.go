// Package browser starts headless Chromium for tests and tools, through
// chromedp. It is a test and tooling helper: production code never imports
// it.
//
// The browser is found by [Find]: the program named by SHIP_CHROMIUM, else
// chromium, chromium-browser or google-chrome on PATH. [Launch] starts it with
// a fresh profile; [ForTest] does the same for a test and skips the test when
// no browser is installed, unless SHIP_REQUIRE_BROWSER=1 (CI sets it, so a
// missing browser fails there instead of passing silently).
package browser

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Environment variables read by this package.
const (
	// EnvChromium names the browser program (a path or a name on PATH). It
	// wins over the search of PATH.
	EnvChromium = "SHIP_CHROMIUM"
	// EnvRequire, when "1", makes ForTest fail the test when no browser is
	// found instead of skipping it.
	EnvRequire = "SHIP_REQUIRE_BROWSER"
)

// TestTimeout bounds each context ForTest returns: when it runs out the
// browser is killed, so a hung page fails the test instead of hanging CI.
const TestTimeout = 60 * time.Second

// ErrNotFound is returned (wrapped) by Find and Launch when no browser is
// installed.
var ErrNotFound = errors.New("no Chromium found: install it (Debian/Ubuntu: apt-get install chromium) or set " + EnvChromium + " to its path")

// Find returns the path of the browser to run: SHIP_CHROMIUM when set (it must
// name an executable), else the first of chromium, chromium-browser and
// google-chrome found on PATH. When none is found the error wraps ErrNotFound.
func Find() (string, error) {
	if name := os.Getenv(EnvChromium); name != "" {
		path, err := exec.LookPath(name)
		if err != nil {
			return "", fmt.Errorf("finding the browser named by %s=%q: %w", EnvChromium, name, err)
		}
		return path, nil
	}
	candidates := []string{"chromium", "chromium-browser", "google-chrome"}
	for _, name := range candidates {
		if path, err := exec.LookPath(name); err == nil {
			return path, nil
		}
	}
	return "", fmt.Errorf("looking for %v on PATH: %w", candidates, ErrNotFound)
}

// options are the flags of the browser process. chromedp's defaults already
// give headless, --no-first-run, --disable-background-networking,
// --disable-sync and --disable-dev-shm-usage (/dev/shm is small in
// containers), and a fresh temp --user-data-dir (in os.TempDir) that it
// removes when the browser exits.
func options(path string) []chromedp.ExecAllocatorOption {
	return append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		// Chromium refuses to start as root (as in a CI container) with its
		// sandbox on; the pages it opens are our own loopback servers.
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		// Loopback pages only: no QUIC probes, no component downloads.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
	)
}

// Launch starts a headless browser under ctx and returns a chromedp context
// with one open tab, ready for chromedp.Run and chromedp.Do. The cancel
// function kills the browser and waits until its temp profile folder is
// removed; call it once done. The browser also dies when ctx ends.
func Launch(ctx context.Context) (context.Context, context.CancelFunc, error) {
	path, err := Find()
	if err != nil {
		return nil, nil, err
	}
	// Chromium puts its singleton socket folder (and, with
	// --disable-dev-shm-usage, its shared memory files) in TMPDIR and never
	// removes them when killed; a TMPDIR of its own is removed afterwards.
	tmp, err := os.MkdirTemp("", "ship-browser-")
	if err != nil {
		return nil, nil, fmt.Errorf("making the browser's temp folder: %w", err)
	}
	opts := append(options(path), chromedp.Env("TMPDIR="+tmp))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	tabCtx, cancelTab := chromedp.NewContext(allocCtx)
	cancel := func() {
		cancelTab()
		// The allocator's cancel waits until the browser and its child
		// processes are dead and the profile folder is removed, so nothing
		// writes to tmp any more.
		cancelAlloc()
		_ = os.RemoveAll(tmp)
	}
	// The first run starts the process and opens the tab, so a browser that
	// cannot start is reported here, not by the caller's first action.
	if err := chromedp.Do(tabCtx); err != nil {
		cancel()
		return nil, nil, fmt.Errorf("starting %s: %w", path, err)
	}
	return tabCtx, cancel, nil
}

// ForTest launches a browser for t and returns its chromedp context, which
// ends after TestTimeout; cleanup kills the browser. When no browser is
// installed it skips t, or fails it when SHIP_REQUIRE_BROWSER=1. A browser
// that is found but does not start always fails t.
func ForTest(t testing.TB) context.Context {
	t.Helper()
	ctx, cancelTimeout := context.WithTimeout(context.Background(), TestTimeout)
	bctx, cancel, err := Launch(ctx)
	if err != nil {
		cancelTimeout()
		if errors.Is(err, ErrNotFound) && os.Getenv(EnvRequire) != "1" {
			t.Skipf("browser test skipped: %v (set %s=1 to fail instead)", err, EnvRequire)
		}
		t.Fatalf("launching the browser: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		cancelTimeout()
	})
	return bctx
}
