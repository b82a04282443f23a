package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// htmxConfig keeps htmx from evaluating code found in pages or answers
// and from adding inline styles the Content-Security-Policy would block.
const htmxConfig = `{"allowEval":false,"allowScriptTags":false,"includeIndicatorStyles":false,"historyCacheSize":0}`

// head writes the document's start, shared by the pages and the login.
func (c *Console) head(m *markup, title string, scripts bool) {
	m.raw(`<!doctype html><html lang="en"><head><meta charset="utf-8">` +
		`<meta name="viewport" content="width=device-width, initial-scale=1">` +
		`<meta name="color-scheme" content="light dark"><link rel="icon" href="data:,">`)
	m.open("meta", "name", "htmx-config", "content", htmxConfig)
	m.el("title", title+" · ship")
	m.open("link", "rel", "stylesheet", "href", c.asset("console.css"))
	if scripts {
		m.open("script", "src", c.asset("htmx-2.0.8.min.js"), "defer", on)
		m.close("script")
		m.open("script", "src", c.asset("console.js"), "defer", on)
		m.close("script")
	}
	m.raw("</head>")
}

// layout writes a whole page: navigation, then what main writes.
func (c *Console) layout(m *markup, r *http.Request, title string, main func(*markup)) {
	var csrf string
	if sess := sessionFrom(r.Context()); sess != nil {
		csrf = sess.csrf
	}
	waiting, _ := c.opts.View.Pending("") // approvals, for the navigation badge
	pending := len(waiting)
	c.head(m, title, true)
	// Every htmx request carries the session's CSRF token.
	m.open("body", "hx-headers", `{"X-CSRF-Token": "`+csrf+`"}`)
	m.raw(`<a class="skip" href="#main">Skip to content</a><header class="top"><a class="brand" href="/">ship</a>`)
	m.raw(`<nav aria-label="Console"><ul>`)
	for _, n := range navigation {
		m.open("li")
		m.open("a", "href", n.Path, "?aria-current", when(current(n.Path, r.URL.Path), "page"))
		m.text(n.Title)
		if n.Path == "/approvals" && pending > 0 {
			m.raw(" ")
			m.el("span", strconv.Itoa(pending), "class", "badge", "title", "waiting for a decision")
		}
		m.raw("</a></li>")
	}
	m.raw("</ul></nav>")
	if c.opts.Token != "" { // signed in: offer to sign out
		m.raw(`<form class="logout" method="post" action="/logout">`)
		m.open("input", "type", "hidden", "name", csrfField, "value", csrf)
		m.raw(`<button class="link" type="submit">Log out</button></form>`)
	}
	m.raw(`</header><div id="flash" role="alert" hidden></div>`)
	main(m)
	m.el("footer", "ship "+c.opts.Version)
	m.raw("</body></html>")
}

// current reports whether the navigation entry nav is the page at path
// or holds it (/chats holds /chats/x).
func current(nav, path string) bool {
	return nav == path || nav != "/" && strings.HasPrefix(path, nav+"/")
}

// renderLogin shows the login page, with msg when the last try failed.
func (c *Console) renderLogin(w http.ResponseWriter, r *http.Request, status int, msg string) {
	action := "/login"
	if next := safeNext(r.URL.Query().Get("next")); next != "/" {
		action += "?next=" + url.QueryEscape(next)
	}
	var m markup
	c.head(&m, "Sign in", false)
	m.raw(`<body class="login"><main id="main"><h1>ship console</h1>`)
	m.open("form", "method", "post", "action", action)
	m.raw(`<label for="token">API token</label>` +
		`<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>` +
		`<p class="muted">The value of SHIP_API_TOKEN (or server.token in ship.json) that ship runs with.</p>`)
	if msg != "" {
		m.el("p", msg, "class", "error", "role", "alert")
	}
	m.raw(`<button class="primary" type="submit">Sign in</button></form></main></body></html>`)
	c.write(w, status, &m)
}

// entries writes a chat's log and the approvals waiting in it: the part
// of the Chat page that reloads while the bot works.
func (c *Console) entries(m *markup, d chatData) {
	if d.Older {
		m.open("p", "class", "muted older")
		m.textf("Showing the last %d entries. ", d.Limit)
		if d.Limit < maxEntries {
			m.el("a", "Show more", "href", chatURL(d.Key)+"?limit="+strconv.Itoa(d.MoreLimit))
		}
		m.close("p")
	}
	if len(d.Entries) == 0 {
		m.open("p", "class", "empty")
		m.text("Nothing in this chat yet.")
		if d.CanSend {
			m.text(" Write below to talk to ship.")
		}
		m.close("p")
	} else {
		m.open("ol", "class", "log")
		for _, e := range d.Entries {
			entry(m, e, false)
		}
		m.close("ol")
	}
	if len(d.Pending) > 0 {
		m.raw(`<section class="pending" aria-label="Approvals waiting in this chat"><h2>Waiting for approval</h2><ul class="plain">`)
		for _, p := range d.Pending {
			pending(m, p)
		}
		m.raw("</ul></section>")
	}
}

// entry writes one chat log entry; withChat links its chat (search hits).
func entry(m *markup, e entryView, withChat bool) {
	m.open("li", "class", "entry "+e.Role+when(e.Undelivered != "", " undelivered"))
	m.open("div", "class", "meta")
	if withChat {
		m.el("a", e.ChatKey, "href", chatURL(e.ChatKey))
		m.raw(" · ")
	}
	who := e.Role
	switch {
	case e.Role == "tool":
		who = "⚙ " + e.Tool
	case e.Who != "":
		who = e.Who
	}
	m.el("span", who, "class", "who")
	m.raw(" ")
	m.el("time", clock(e.At), "datetime", e.At.UTC().Format("2006-01-02T15:04:05Z"), "title", e.At.Format("2006-01-02 15:04:05 MST"))
	if e.Outcome != "" {
		m.raw(" ")
		m.el("span", e.Outcome, "class", "tag "+when(e.Outcome == "ok", "ok")+when(e.Outcome != "ok", "bad"))
	}
	if e.Approval != "" {
		m.raw(" ")
		m.el("span", "approval "+e.Approval, "class", "tag")
	}
	m.close("div")
	switch {
	case e.Undelivered != "":
		// An error for whoever reads the chat: the user did not get it.
		m.el("div", e.Undelivered, "class", "text error", "role", "status")
	case e.Role == "tool":
		m.el("pre", e.Text, "class", "text tool")
	case e.HTML != "":
		m.open("div", "class", "text md")
		m.rendered(e.HTML)
		m.close("div")
	case e.Text != "":
		m.el("div", e.Text, "class", "text")
	}
	if e.Question != nil {
		question(m, e.ChatKey, *e.Question)
	}
	if len(e.Images) > 0 {
		m.open("div", "class", "images")
		for _, u := range e.Images {
			m.open("a", "href", u, "target", "_blank", "rel", "noopener")
			m.open("img", "src", u, "alt", "image sent in the chat", "loading", "lazy")
			m.close("a")
		}
		m.close("div")
	}
	if len(e.Downloads) > 0 {
		m.open("ul", "class", "downloads plain")
		for _, f := range e.Downloads {
			m.open("li")
			m.open("a", "href", f.URL, "download", on)
			m.text("📎 " + f.Name)
			m.close("a")
			m.raw(" ")
			m.el("span", f.Size, "class", "muted")
			m.close("li")
		}
		m.close("ul")
	}
	if len(e.Files) > 0 {
		m.open("div", "class", "files")
		for _, f := range e.Files {
			m.el("span", "📎 "+f, "class", "tag")
			m.raw(" ")
		}
		m.close("div")
	}
	m.close("li")
}

// question writes the choices of a question the bot asked: a button each
// while it takes answers, else the choices as text with the one taken
// marked where the log tells.
func question(m *markup, chatKey string, q questionView) {
	if !q.Open {
		m.open("ol", "class", "choices closed", "aria-label", "Choices (closed)")
		for i, ch := range q.Choices {
			m.open("li", "?class", when(q.Answer == i+1, "chosen"))
			m.text(ch)
			if q.Answer == i+1 {
				m.raw(` <span class="tag ok">chosen</span>`)
			}
			m.close("li")
		}
		m.close("ol")
		if q.Answer == 0 && q.Checked {
			m.el("p", "This question no longer takes answers.", "class", "muted")
		}
		return
	}
	vals, _ := json.Marshal(map[string]string{"chat": chatKey})
	m.open("div", "class", "choices", "role", "group", "aria-label", "Answer the question")
	for i, ch := range q.Choices {
		m.el("button", ch, "type", "button", "hx-post", "/console/questions/"+url.PathEscape(q.ID)+"/"+strconv.Itoa(i+1),
			"hx-vals", string(vals), "hx-swap", "none", "data-after", "answered")
	}
	m.close("div")
}

// pending writes one approval request with its Approve and Deny buttons.
func pending(m *markup, p pendingView) {
	m.open("li", "class", "approval", "id", "approval-"+p.Code)
	m.open("div")
	m.el("strong", p.Tool)
	if p.Arg != "" {
		m.raw(" ")
		m.el("code", p.Arg)
	}
	m.close("div")
	m.el("div", "code "+p.Code+" · asked by "+p.Who+" "+ago(p.Asked)+" · expires "+ago(p.Expires), "class", "muted")
	m.open("div", "class", "buttons")
	m.el("button", "Approve", "class", "primary", "hx-post", "/console/approvals/"+p.Code+"/approve", "hx-swap", "none", "data-after", "refresh")
	m.el("button", "Deny", "hx-post", "/console/approvals/"+p.Code+"/deny", "hx-swap", "none", "data-after", "refresh")
	m.raw("</div></li>")
}
