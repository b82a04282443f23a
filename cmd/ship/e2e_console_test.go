package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/shipmyagent/ship/internal/browser"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/faketelegram"
)

const consoleAPIToken = "console-e2e-token-5150"

// consoleModel writes "write N" slowly (see slowWriter) and otherwise
// runs "run: CMD" in the shell or echoes, as RunCommands does.
func consoleModel(r fakeopenai.Request) fakeopenai.Response {
	if strings.HasPrefix(r.LastUser(), "write ") {
		return slowWriter(r)
	}
	return fakeopenai.RunCommands(r)
}

// consoleShip runs ship with the Telegram fake, the console behind the
// API token, and the README's approval policy with the console acting as
// role admin.
func consoleShip(t *testing.T) (*faketelegram.Server, *shipProc) {
	t.Helper()
	const token = "4242:e2e-console-token"
	tg := startTelegram(t, token)
	fake := startFake(t, consoleModel)
	dir := initProject(t)
	setTools(t, dir, fmt.Sprintf(approvalTools, 600))
	setConfig(t, dir, "server", `{"consoleRole": "admin"}`)
	env := modelEnv(fake, append(telegramEnv(tg, token), "SHIP_API_TOKEN="+consoleAPIToken)...)
	return tg, startShip(t, dir, env)
}

// run runs chromedp steps and fails the test with what was being done.
func run(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// poll waits until a JavaScript expression is true in the page; the
// browser context's deadline is the hang guard.
func poll(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	if err := chromedp.Do(ctx, browser.Until(expr)); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// login signs the browser in through the login form.
func login(t *testing.T, ctx context.Context, p *shipProc) {
	t.Helper()
	run(t, ctx, "opening the console",
		chromedp.Navigate(p.url+"/"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), consoleAPIToken),
		chromedp.Submit(chromedp.CSS("#token")),
	)
	poll(t, ctx, "the overview after login", `document.querySelector("h1") && document.querySelector("h1").textContent === "Overview"`)
}

// sessionAndCSRF returns the browser's session cookie and the page's CSRF
// token, for requests made outside the browser.
func sessionAndCSRF(t *testing.T, ctx context.Context) (*network.Cookie, string) {
	t.Helper()
	cookies, err := chromedp.Run(ctx, browser.Cookies())
	if err != nil {
		t.Fatal(err)
	}
	var session *network.Cookie
	for _, c := range cookies {
		if c.Name == "ship_console" {
			session = c
		}
	}
	if session == nil {
		t.Fatalf("no session cookie among %d cookies", len(cookies))
	}
	var headers map[string]string
	if err := json.Unmarshal([]byte(eval[string](t, ctx, `document.body.getAttribute("hx-headers")`)), &headers); err != nil {
		t.Fatal(err)
	}
	return session, headers["X-CSRF-Token"]
}

func TestE2EConsoleInABrowser(t *testing.T) {
	ctx := browser.ForTest(t)
	tg, p := consoleShip(t)
	tgCtx, cancel := context.WithTimeout(context.Background(), 4*hangGuard)
	defer cancel()

	// Login with the token: the session cookie is HttpOnly and strict.
	login(t, ctx, p)
	session, csrf := sessionAndCSRF(t, ctx)
	if !session.HTTPOnly || session.SameSite != network.CookieSameSiteStrict || session.Value == consoleAPIToken {
		t.Errorf("session cookie HttpOnly=%v SameSite=%q", session.HTTPOnly, session.SameSite)
	}
	if got := eval[string](t, ctx, `document.cookie`); strings.Contains(got, "ship_console") {
		t.Errorf("the page's scripts can read the session cookie: %q", got)
	}
	if strings.Contains(eval[string](t, ctx, `document.documentElement.outerHTML`), consoleAPIToken) {
		t.Error("the page shows the API token")
	}

	// A POST with the session but without the CSRF token is refused and
	// changes nothing; with it, it is taken.
	form := url.Values{"chat": {"api:chat:csrf"}, "text": {"sent without a token"}}
	post := func(header ...string) response {
		header = append(header, "Content-Type: application/x-www-form-urlencoded", "Cookie: ship_console="+session.Value)
		return p.do(t, http.MethodPost, "/console/send", form.Encode(), header...)
	}
	if r := post(); r.status != http.StatusForbidden {
		t.Fatalf("POST without the CSRF token: %d %s", r.status, r.body)
	}
	bearer := "Authorization: Bearer " + consoleAPIToken
	if r := p.do(t, http.MethodGet, "/api/chats/api:chat:csrf/messages", "", bearer); r.status != http.StatusNotFound {
		t.Fatalf("a refused POST left a chat behind: %d %s", r.status, r.body)
	}
	if r := post("X-CSRF-Token: " + csrf); r.status != http.StatusNoContent {
		t.Fatalf("POST with the CSRF token: %d %s", r.status, r.body)
	}

	// A Telegram message shows on the open Chat page without a reload, and
	// markup in it is text.
	tg.Push(tg.PrivateText(3003, "carol", "first hello"))
	if err := tg.Wait(tgCtx, func() bool { return len(tg.Shown()) > 0 }); err != nil {
		t.Fatalf("no answer on Telegram: %v", err)
	}
	run(t, ctx, "opening carol's chat",
		chromedp.Navigate(p.url+"/chats/telegram:chat:3003"),
		chromedp.WaitVisible(chromedp.CSS("#log")),
	)
	poll(t, ctx, "the first message", `document.getElementById("log").textContent.includes("first hello")`)
	eval[bool](t, ctx, `window.sameDocument = true`)
	evil := `<script>window.pwned = true</script><img src=x onerror="window.pwned = true"> second`
	tg.Push(tg.PrivateText(3003, "carol", evil))
	poll(t, ctx, "the second message, as text", `document.getElementById("log").textContent.includes(`+jsString(evil)+`)`)
	poll(t, ctx, "the answer to it", `document.getElementById("log").textContent.includes(`+jsString("echo: "+evil)+`)`)
	if !eval[bool](t, ctx, `window.sameDocument === true`) {
		t.Error("the page reloaded to show the message")
	}
	if eval[bool](t, ctx, `window.pwned === true || document.querySelectorAll("#log script, #log img").length > 0`) {
		t.Error("markup a chat user wrote ran or rendered as HTML")
	}

	// The console box: the reply streams into the page, then stays in the log.
	run(t, ctx, "opening the console chat",
		chromedp.Navigate(p.url+"/chats/api:chat:console"),
		chromedp.WaitVisible(chromedp.CSS("#text")),
	)
	// Record every length the streamed reply shows while it grows.
	eval[bool](t, ctx, `(window.lens = [], new MutationObserver(() => {
		const b = document.querySelector("#live .entry .text");
		if (b) window.lens.push(b.textContent.length);
	}).observe(document.getElementById("live"), {subtree: true, childList: true, characterData: true}), true)`)
	run(t, ctx, "sending from the console box",
		chromedp.SendKeys(chromedp.CSS("#text"), "write 1200"),
		chromedp.Click(chromedp.CSS("#send button")),
	)
	want := longText(1200)
	// The log shows the reply formatted: its code block as one, the rest
	// as paragraphs; every word of it is there, in order.
	poll(t, ctx, "the whole reply in the log", `Array.from(document.querySelectorAll("#log .entry.assistant .text.md")).some(e =>
		e.querySelector("pre > code.language-go") !== null && e.textContent.replace(/\s+/g, "") === `+jsString(wordsOf(want))+`)`)
	poll(t, ctx, "the live reply to be folded into the log", `document.querySelectorAll("#live .entry").length === 0`)
	lens := eval[[]int](t, ctx, `window.lens`)
	growing := map[int]bool{}
	for _, n := range lens {
		if n > 0 && n < len([]rune(want)) {
			growing[n] = true
		}
	}
	if len(growing) < 3 {
		t.Errorf("the reply showed %d partial lengths while it was written (%v); want it to stream in", len(growing), lens)
	}
	if !eval[bool](t, ctx, `document.getElementById("log").textContent.includes("write 1200")`) {
		t.Error("the console's own message is not in the log")
	}

	// Approve from the console: the call runs once, in its Telegram topic.
	const group, topic = int64(-100900), int64(5)
	tg.Push(tg.TopicText(group, topic, 1001, "alice", tg.Mention()+" run: echo console-approved"))
	if err := tg.Wait(tgCtx, func() bool {
		for _, s := range tg.Shown() {
			if s.ChatID == group && len(s.Buttons) > 0 {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("no approval request in the topic: %v", err)
	}
	run(t, ctx, "opening the approvals",
		chromedp.Navigate(p.url+"/approvals"),
		chromedp.WaitVisible(chromedp.CSS(".approval button.primary")),
	)
	if !eval[bool](t, ctx, `document.querySelector(".approval").textContent.includes("echo console-approved")`) {
		t.Fatal("the approval does not show the command")
	}
	run(t, ctx, "approving", chromedp.Click(chromedp.CSS(".approval button.primary")))
	poll(t, ctx, "the approval to leave the list", `document.querySelectorAll(".approval").length === 0`)
	if err := tg.Wait(tgCtx, func() bool {
		for _, s := range tg.Shown() {
			if s.ChatID == group && s.ThreadID == topic && strings.HasPrefix(s.Text, "result: ") && strings.Contains(s.Text, `console-approved\n`) {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("the approved command's result never reached the topic: %v", err)
	}
	r := p.do(t, http.MethodGet, fmt.Sprintf("/api/chats/telegram:chat:%d:topic:%d/messages?limit=500", group, topic), "", bearer)
	var log struct {
		Messages []struct {
			Role string         `json:"role"`
			Meta map[string]any `json:"meta"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(r.body, &log); err != nil {
		t.Fatalf("chat log %d %s: %v", r.status, r.body, err)
	}
	runs := 0
	for _, m := range log.Messages {
		if m.Role == "tool" && m.Meta["tool"] == "exec_shell" && m.Meta["outcome"] == "ok" {
			runs++
		}
	}
	if runs != 1 {
		t.Errorf("exec_shell ran %d times after one approval, want once", runs)
	}
}

// jsString quotes s for JavaScript.
func jsString(s string) string {
	b, _ := json.Marshal(s) // a string always encodes
	return string(b)
}

// wordsOf is Markdown's text as a page shows it, without its code fences
// and whitespace: what the formatted reply must hold, in order.
func wordsOf(md string) string {
	var b strings.Builder
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "```") {
			b.WriteString(strings.Join(strings.Fields(line), ""))
		}
	}
	return b.String()
}
