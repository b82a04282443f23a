// Command console screenshots ship's web console and measures its first paint
// (issue 16). Against a running ship (or any HTML server with the same
// paths) it logs in through /login when a token is given, then for each page
// writes full-page PNGs for desktop (1280×800) and phone (375×812, mobile
// emulation) in light and dark colour schemes, and loads each page -n times
// to print the median and max first-contentful-paint as a Markdown table.
//
//	go run ./bench/console [-url http://127.0.0.1:3000] [-token T] [-out DIR] [-n 20]
//
// It drives headless Chromium through internal/browser (SHIP_CHROMIUM names
// the browser). Screenshots go to -out, by default a fresh folder under the
// system temp folder, never into the repository.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/shipmyagent/ship/internal/browser"
)

// firstChat in -pages stands for the first chat linked from /chats.
const firstChat = "/chats/*"

// options are the command-line flags.
type options struct {
	base    *url.URL
	token   string
	pages   []string
	out     string
	loads   int
	wait    string
	timeout time.Duration
}

func main() {
	var (
		o       options
		rawURL  string
		pages   string
		timeout time.Duration
	)
	flag.StringVar(&rawURL, "url", "http://127.0.0.1:3000", "base URL of the running ship (ship start listens on port 3000 unless told otherwise)")
	flag.StringVar(&o.token, "token", "", "API token to log in with through /login (default: $SHIP_API_TOKEN; none: no login)")
	flag.StringVar(&pages, "pages", "/,/chats,"+firstChat+",/approvals,/tasks,/tools",
		"comma-separated paths to visit; "+firstChat+" is the first chat linked from /chats")
	flag.StringVar(&o.out, "out", "", "folder for the PNGs (default: a new folder under the system temp folder)")
	flag.IntVar(&o.loads, "n", 20, "loads per page for the first-paint figures")
	flag.StringVar(&o.wait, "wait", "#main", "CSS selector every page must show before its screenshot")
	flag.DurationVar(&timeout, "timeout", 5*time.Minute, "deadline for the whole run")
	flag.Usage = func() {
		fmt.Fprint(flag.CommandLine.Output(), `Usage: go run ./bench/console [flags]

Screenshots each console page (desktop 1280x800 and phone 375x812, light and
dark) into -out and prints first-contentful-paint per page as Markdown.

Flags:
`)
		flag.PrintDefaults()
	}
	flag.Parse()
	base, err := parseBase(rawURL)
	if err != nil {
		fmt.Fprintf(os.Stderr, "console: %v\n", err)
		os.Exit(2)
	}
	o.base, o.timeout = base, timeout
	o.pages = splitPages(pages)
	if flag.NArg() > 0 || o.loads < 1 || len(o.pages) == 0 || timeout <= 0 {
		flag.Usage()
		os.Exit(2)
	}
	if o.token == "" {
		o.token = os.Getenv("SHIP_API_TOKEN")
	}
	if err := start(o); err != nil {
		fmt.Fprintf(os.Stderr, "console: %v\n", err)
		os.Exit(1)
	}
}

// start launches the browser, makes the output folder and runs.
func start(o options) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	if o.out == "" {
		dir, err := os.MkdirTemp("", "ship-console-")
		if err != nil {
			return fmt.Errorf("making the output folder: %w", err)
		}
		o.out = dir
	} else if err := os.MkdirAll(o.out, 0o755); err != nil {
		return fmt.Errorf("making the output folder: %w", err)
	}
	bctx, closeBrowser, err := browser.Launch(ctx)
	if err != nil {
		return err
	}
	defer closeBrowser()
	return run(bctx, o, os.Stdout, os.Stderr)
}

// run does the work in the browser tab of ctx: the report goes to out,
// progress to log.
func run(ctx context.Context, o options, out, log io.Writer) error {
	version, err := browserVersion(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "console: %s, %s, screenshots in %s\n", version, o.base, o.out)
	if o.token != "" {
		if err := login(ctx, o.base, o.token); err != nil {
			return err
		}
		fmt.Fprintln(log, "console: logged in")
	}
	var rows []timing
	for _, path := range o.pages {
		if path == firstChat {
			if path, err = firstChatPath(ctx, o.base); err != nil {
				return err
			}
			if path == "" {
				// A console with no chats yet links to none.
				fmt.Fprintln(log, "console: /chats links to no chat; skipping the chat page")
				continue
			}
		}
		name := pageName(path)
		files, err := screenshots(ctx, o.base, path, name, o.out, o.wait)
		if err != nil {
			return fmt.Errorf("page %s: %w", path, err)
		}
		for _, f := range files {
			fmt.Fprintf(log, "console: wrote %s\n", f)
		}
		row, err := measure(ctx, o.base, path, o.loads)
		if err != nil {
			return fmt.Errorf("page %s: %w", path, err)
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return errors.New("no page to visit")
	}
	report(out, version, rows)
	return nil
}

// parseBase checks the -url flag: an absolute http(s) URL, without a path
// beyond "/".
func parseBase(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSuffix(raw, "/"))
	if err != nil {
		return nil, fmt.Errorf("parsing -url: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" {
		return nil, fmt.Errorf("-url %q: want http(s)://host:port", raw)
	}
	return u, nil
}

// splitPages splits the -pages flag and drops empty items.
func splitPages(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			if !strings.HasPrefix(p, "/") {
				p = "/" + p
			}
			out = append(out, p)
		}
	}
	return out
}

// pageName is the file name stem for path: "overview" for "/", "chat" for a
// single chat, else the path with slashes and other signs as dashes.
func pageName(path string) string {
	p := strings.Trim(strings.SplitN(path, "?", 2)[0], "/")
	switch {
	case p == "":
		return "overview"
	case strings.HasPrefix(p, "chats/"):
		return "chat"
	}
	var b strings.Builder
	for _, r := range strings.ToLower(p) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return b.String()
}
