package console

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/shipmyagent/ship/runtime/policy"
)

// dl writes a definition list of label, value pairs.
func dl(m *markup, pairs ...func()) {
	m.open("dl")
	for _, p := range pairs {
		p()
	}
	m.close("dl")
}

// item is one dt/dd pair whose value body writes.
func item(m *markup, label string, body func()) func() {
	return func() {
		m.el("dt", label)
		m.wrap("dd", body)
	}
}

// number writes a figure and what it counts.
func number(m *markup, n int, class, rest string) {
	m.el("span", strconv.Itoa(n), "class", "num"+class)
	if rest != "" {
		m.raw(" ")
		m.el("span", rest, "class", "muted")
	}
}

func (d overviewData) write(m *markup) {
	m.raw(`<main id="main" hx-get="/" hx-trigger="every 5s" hx-swap="outerHTML"><h1>Overview</h1>`)
	writeConfig(m, d.Config)
	m.raw(`<section class="cards" aria-label="At a glance"><div class="card"><h2>ship</h2>`)
	dl(m,
		item(m, "Version", func() { m.text(d.Version) }),
		item(m, "Up for", func() {
			m.text(d.Uptime + " ")
			m.el("span", "(since "+clock(d.Started)+")", "class", "muted")
		}))
	m.open("p")
	m.el("a", "Talk to ship in the console chat", "href", chatURL(consoleChatKey))
	m.close("p")
	m.raw(`</div><div class="card"><h2>Queue</h2>`)
	dl(m,
		item(m, "Waiting", func() { number(m, d.Waiting, "", "of "+strconv.Itoa(d.Capacity)+" places") }),
		item(m, "Running", func() { number(m, len(d.Running), "", "of "+strconv.Itoa(d.Workers)+" at a time") }))
	if len(d.Running) > 0 {
		m.open("p")
		m.text("Now answering: ")
		for i, k := range d.Running {
			if i > 0 {
				m.text(", ")
			}
			m.el("a", k, "href", chatURL(k))
		}
		m.close("p")
	} else {
		m.el("p", "Idle.", "class", "muted")
	}
	m.raw(`</div><div class="card"><h2>Last hour`)
	if d.Young {
		m.raw(` <span class="muted">(since start)</span>`)
	}
	m.raw(`</h2>`)
	dl(m,
		item(m, "Turns", func() { number(m, d.Turns, "", "") }),
		item(m, "Errors", func() { number(m, d.Errors, when(d.Errors > 0, " bad"), "") }),
		item(m, "Approvals", func() {
			if d.Approvals > 0 {
				m.wrap("a", func() { number(m, d.Approvals, "", "waiting") }, "href", "/approvals")
				return
			}
			number(m, 0, "", "waiting")
		}))
	m.raw(`</div></section>`)

	m.raw(`<section aria-labelledby="platforms"><h2 id="platforms">Platforms</h2><div class="scroll"><table>` +
		`<thead><tr><th scope="col">Channel</th><th scope="col">State</th><th scope="col">Detail or last error</th></tr></thead><tbody>`)
	for _, a := range d.Adapters {
		m.open("tr")
		m.el("td", a.Name)
		m.wrap("td", func() { m.el("span", a.State, "class", "state "+a.State) })
		m.el("td", a.Detail, "class", "wrap")
		m.close("tr")
	}
	if len(d.Adapters) == 0 {
		m.raw(`<tr><td colspan="3" class="muted">No platform is configured.</td></tr>`)
	}
	m.raw(`</tbody></table></div></section>`)

	m.raw(`<section aria-labelledby="mcp"><h2 id="mcp">MCP servers</h2>`)
	if len(d.MCP) == 0 {
		m.raw(`<p class="muted">None configured (<code>mcp.servers</code> in ship.json).</p>`)
	} else {
		m.raw(`<div class="scroll"><table><thead><tr><th scope="col">Server</th><th scope="col">State</th>` +
			`<th scope="col">Tools</th><th scope="col">Last error</th></tr></thead><tbody>`)
		for _, s := range d.MCP {
			m.open("tr")
			m.wrap("td", func() { m.text(s.Name + " "); m.el("span", s.Transport, "class", "muted") })
			m.wrap("td", func() {
				m.el("span", s.State, "class", "state "+s.State)
				if s.Restarts > 0 {
					m.raw(" ")
					m.el("span", strconv.Itoa(s.Restarts)+" restarts", "class", "muted")
				}
			})
			m.el("td", strconv.Itoa(s.Tools))
			if s.LastError != "" {
				m.el("td", s.LastError, "class", "wrap")
			} else {
				m.raw(`<td class="wrap"><span class="muted">none</span></td>`)
			}
			m.close("tr")
		}
		m.raw(`</tbody></table></div>`)
	}
	m.raw(`</section><section aria-labelledby="models"><h2 id="models">Models</h2><ul class="plain">`)
	for _, mo := range d.Models {
		m.open("li")
		m.el("strong", mo.Name)
		m.raw(" ")
		m.el("span", mo.Provider+"/"+mo.Model, "class", "muted")
		if mo.Default {
			m.raw(` <span class="tag">default</span>`)
		}
		m.close("li")
	}
	m.raw(`</ul></section></main>`)
}

func (d chatsData) write(m *markup) {
	m.raw(`<main id="main"><h1>Chats</h1><p>`)
	m.el("a", "Talk to ship in the console chat", "class", "button primary", "href", chatURL(d.ConsoleKey))
	m.raw(`</p><form class="search" method="get" action="/chats" role="search"><label for="q">Search messages</label>`)
	m.open("input", "id", "q", "name", "q", "type", "search", "value", d.Query, "placeholder", "a word or phrase")
	m.raw(`<label for="platform">Platform</label><select id="platform" name="platform"><option value="">all</option>`)
	for _, p := range d.Platforms {
		m.el("option", p, "value", p, "?selected", when(p == d.Platform, on))
	}
	m.raw(`</select><button type="submit">Search</button>`)
	if d.Query != "" || d.Platform != "" {
		m.raw(`<a href="/chats">Clear</a>`)
	}
	m.raw(`</form>`)
	switch {
	case d.Searched:
		more := when(d.More, "+")
		m.el("h2", strconv.Itoa(len(d.Hits))+more+" messages with “"+d.Query+"”")
		if len(d.Hits) == 0 {
			m.raw(`<p class="empty">No message matches.</p>`)
			break
		}
		m.open("ol", "class", "log hits")
		for _, h := range d.Hits {
			entry(m, h, true)
		}
		m.close("ol")
	case len(d.Chats) == 0:
		m.open("p", "class", "empty")
		m.text("No chats yet")
		if d.Platform != "" {
			m.text(" on " + d.Platform)
		}
		m.text(". Messages people send the bot appear here.")
		m.close("p")
	default:
		m.open("ul", "class", "chats plain")
		for _, ch := range d.Chats {
			m.open("li")
			m.open("a", "href", chatURL(ch.Key))
			m.open("span", "class", "head")
			m.el("span", clipRunes(ch.Title, titleRunes), "class", "title")
			m.raw(" ")
			m.el("span", ch.Channel, "class", "tag")
			if ch.Kind != "" && ch.Kind != ch.Channel {
				m.raw(" ")
				m.el("span", ch.Kind, "class", "muted")
			}
			m.close("span")
			m.el("time", ago(ch.LastAt), "class", "muted", "datetime", ch.LastAt.UTC().Format("2006-01-02T15:04:05Z"))
			m.el("span", preview(ch.Last.Role, ch.Last.Text), "class", "last")
			m.raw("</a></li>")
		}
		m.close("ul")
		d.writePager(m)
	}
	m.raw(`</main>`)
}

func (c *Console) writeChat(m *markup, d chatData) {
	m.open("main", "id", "main", "class", "chat", "data-chat", d.Key)
	m.el("h1", d.Title)
	m.open("p", "class", "muted")
	m.el("code", d.Key)
	m.text(" · " + d.Channel)
	if d.Kind != "" && d.Kind != d.Channel {
		m.text(" · " + d.Kind)
	}
	m.raw(` · <a href="/chats">all chats</a></p>`)
	m.open("div", "id", "log", "hx-get", "/console/entries?chat="+url.QueryEscape(d.Key)+"&limit="+strconv.Itoa(d.Limit),
		"hx-trigger", "refresh, every 15s", "hx-swap", "innerHTML")
	c.entries(m, d)
	m.raw(`</div><div id="live" aria-live="polite"></div>`)
	if d.CanSend {
		m.raw(`<form id="send" class="send" hx-post="/console/send" hx-swap="none" data-after="sent">`)
		m.open("input", "type", "hidden", "name", "chat", "value", d.Key)
		m.raw(`<label for="text">Message to ship</label>` +
			`<textarea id="text" name="text" rows="3" required placeholder="Ask ship something. Enter sends, Shift+Enter starts a new line."></textarea>` +
			`<button class="primary" type="submit">Send</button></form>`)
	} else {
		m.open("p", "class", "muted")
		m.text("This chat is on " + d.Channel + "; answer it there. To talk to ship from here, open the ")
		m.el("a", "console chat", "href", chatURL(consoleChatKey))
		m.raw(".</p>")
	}
	m.raw(`</main>`)
}

func (d approvalsData) write(m *markup) {
	m.raw(`<main id="main" hx-get="/approvals" hx-trigger="every 10s" hx-swap="outerHTML"><h1>Approvals</h1>`)
	if !d.Enabled {
		m.raw(`<p class="empty">Approvals are not enabled here: ship keeps no approvals file.</p></main>`)
		return
	}
	switch {
	case d.MayApprove:
		m.open("p", "class", "muted")
		m.text("You answer as role ")
		m.el("strong", d.Role)
		m.raw(`, with the same rules as <code>/approve</code> and <code>/deny</code> in a chat; the chat is told.</p>`)
	case d.Role != "":
		m.open("p", "class", "warn")
		m.text("Role ")
		m.el("strong", d.Role)
		m.raw(` (server.consoleRole) may not approve: give it <code>"approve": true</code> in the tool policy.</p>`)
	default:
		m.raw(`<p class="warn">The console can show approvals but not decide them: set <code>server.consoleRole</code> in ship.json to a tool-policy role that may approve`)
		if len(d.Approvers) > 0 {
			m.text(" (" + strings.Join(d.Approvers, ", ") + ")")
		}
		m.raw(".</p>")
	}
	if len(d.Pending) == 0 {
		m.raw(`<p class="empty">Nothing waits for approval.</p></main>`)
		return
	}
	m.open("ul", "class", "plain")
	for _, p := range d.Pending {
		m.raw(`<li class="approval-row"><div class="muted">`)
		m.el("a", policy.VisibleLine(p.ChatKey), "href", chatURL(p.ChatKey))
		m.raw(`</div><ul class="plain">`)
		pending(m, p)
		m.raw(`</ul></li>`)
	}
	m.raw(`</ul></main>`)
}

func (d tasksData) write(m *markup) {
	m.raw(`<main id="main"><h1>Tasks</h1>`)
	switch {
	case !d.Enabled:
		m.raw(`<p class="empty">Scheduled tasks are not enabled here.</p></main>`)
		return
	case len(d.Tasks) == 0:
		m.raw(`<p class="empty">No scheduled tasks. Ask ship to create one (<code>task_create</code>) or add a file under <code>.ship/tasks/</code>.</p></main>`)
		return
	}
	m.raw(`<div class="scroll"><table><thead><tr><th scope="col">Task</th><th scope="col">Schedule</th><th scope="col">Next run</th>` +
		`<th scope="col">Last run</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead><tbody>`)
	for _, t := range d.Tasks {
		m.raw("<tr><td>")
		m.el("strong", t.Name)
		m.raw("<br>")
		m.el("a", t.ChatKey, "class", "muted", "href", chatURL(t.ChatKey))
		if t.Error != "" {
			m.raw("<br>")
			m.el("span", t.Error, "class", "bad")
		}
		m.raw("</td><td>")
		m.el("code", t.Cron)
		m.raw(" ")
		m.el("span", t.Timezone, "class", "muted")
		if !t.Enabled {
			m.raw(` <span class="tag">disabled</span>`)
		}
		m.raw("</td><td>")
		if t.NextRun.IsZero() {
			m.raw(`<span class="muted">—</span>`)
		} else {
			m.text(clock(t.NextRun) + " ")
			m.el("span", "("+ago(t.NextRun)+")", "class", "muted")
		}
		m.raw("</td><td>")
		if t.LastRun.IsZero() {
			m.raw(`<span class="muted">never</span>`)
		} else {
			m.text(clock(t.LastRun) + " ")
			m.el("span", t.LastStatus, "class", "state "+t.LastStatus)
			if t.LastResult != "" {
				m.raw("<br>")
				m.el("span", t.LastResult, "class", "muted clip")
			}
		}
		m.raw("</td><td>")
		if t.Error == "" {
			m.el("button", "Run now", "hx-post", "/console/tasks/"+url.PathEscape(t.Name)+"/run", "hx-swap", "none", "data-after", "refresh")
		}
		m.raw("</td></tr>")
	}
	m.raw(`</tbody></table></div></main>`)
}

func (d toolsData) write(m *markup) {
	m.raw(`<main id="main"><h1>Tools</h1><form class="search" method="get" action="/tools">`)
	m.raw(`<label for="user">As user</label>`)
	m.open("input", "id", "user", "name", "user", "value", d.User, "placeholder", "telegram:123456")
	m.raw(`<label for="chat">In chat</label>`)
	m.open("input", "id", "chat", "name", "chat", "value", d.ChatKey, "placeholder", "telegram:chat:-100123")
	m.raw(`<label for="command">Command</label>`)
	m.open("input", "id", "command", "name", "command", "value", d.Command, "placeholder", "git status")
	m.raw(`<button type="submit">Check</button></form>`)

	who := "For anyone"
	if d.User != "" {
		who = "For " + d.User
		if len(d.Report.Roles) > 0 {
			who += " (roles " + strings.Join(d.Report.Roles, ", ") + ")"
		}
		if d.Report.CanApprove {
			who += ", who may approve"
		}
	}
	if d.ChatKey != "" {
		who += " in " + d.ChatKey + "."
	} else {
		who += ", in a group chat."
	}
	m.el("p", who, "class", "muted")
	m.raw(`<div class="scroll"><table class="tools"><thead><tr><th scope="col">Tool</th><th scope="col">Offered</th>` +
		`<th scope="col">Default</th><th scope="col">Rules</th>`)
	if d.Command != "" {
		m.el("th", "“"+d.Command+"”", "scope", "col")
	}
	m.raw(`</tr></thead><tbody>`)
	for _, t := range d.Report.Tools {
		m.raw("<tr><td>")
		m.el("strong", t.Name)
		if t.ModelName != "" {
			m.raw(" ")
			m.el("span", "("+t.ModelName+")", "class", "muted")
		}
		m.raw("<br>")
		m.el("span", t.Description, "class", "muted clip")
		m.raw("</td><td>")
		if t.Offered {
			m.raw(`<span class="tag ok">yes</span>`)
		} else {
			m.raw(`<span class="tag bad">no</span>`)
		}
		m.raw("</td><td>")
		m.el("span", string(t.Default), "class", "verdict "+string(t.Default))
		m.raw("</td><td>")
		for _, r := range t.Rules {
			m.open("div")
			m.el("span", string(r.Verdict), "class", "verdict "+string(r.Verdict))
			m.raw(" ")
			m.el("code", r.Text)
			m.raw(" ")
			m.el("span", r.Source, "class", "muted")
			m.close("div")
		}
		if len(t.Rules) == 0 {
			m.raw(`<span class="muted">none</span>`)
		}
		m.raw("</td>")
		if d.Command != "" {
			m.open("td")
			if t.Decision != nil {
				m.el("span", string(t.Decision.Verdict), "class", "verdict "+string(t.Decision.Verdict))
				m.raw(" ")
				m.el("span", t.Decision.Reason, "class", "muted")
			} else {
				m.raw(`<span class="muted">—</span>`)
			}
			m.close("td")
		}
		m.raw("</tr>")
	}
	m.raw(`</tbody></table></div></main>`)
}
