package console

import (
	"net/http"
	"strconv"
	"time"

	"github.com/shipmyagent/ship/runtime/engine"
)

// handleUsage shows a day's tokens (?day=YYYY-MM-DD, UTC; today by
// default): in all, and by the chats and people that used the most.
func (c *Console) handleUsage(w http.ResponseWriter, r *http.Request) {
	day := r.URL.Query().Get("day")
	if day != "" {
		if _, err := time.Parse(time.DateOnly, day); err != nil {
			plain(w, http.StatusBadRequest, "day must be a date like 2026-11-26.")
			return
		}
	}
	rep, ok := c.opts.View.Usage(r.Context(), day)
	c.render(w, r, "Usage", func(m *markup) { writeUsage(m, rep, ok) })
}

func writeUsage(m *markup, r engine.UsageReport, ok bool) {
	m.raw(`<main id="main"><h1>Usage</h1>`)
	if !ok {
		m.el("p", "ship counts no tokens in this setup.", "class", "muted")
		m.raw(`</main>`)
		return
	}
	m.open("p")
	m.textf("Tokens on %s (UTC). Budgets (limits.tokens) reset at 00:00 UTC; they count input plus output. ", r.Day)
	m.el("a", "Today", "href", "/usage")
	m.close("p")
	m.raw(`<section class="cards" aria-label="The day's totals"><div class="card"><h2>All chats</h2>`)
	dl(m,
		item(m, "Turns", func() { m.text(strconv.FormatInt(r.Total.Turns, 10)) }),
		item(m, "Input", func() { m.text(strconv.FormatInt(r.Total.Input, 10)) }),
		item(m, "of it cached", func() { m.text(strconv.FormatInt(r.Total.CachedInput, 10)) }),
		item(m, "Output", func() { m.text(strconv.FormatInt(r.Total.Output, 10)) }))
	m.raw(`</div></section>`)
	usageTable(m, "Chats", r.Chats, r.ChatCount, true)
	usageTable(m, "People", r.People, r.PeopleCount, false)
	m.raw(`</main>`)
}

// usageTable lists the top rows; chats link to their page.
func usageTable(m *markup, title string, rows []engine.UsageRow, of int, chats bool) {
	m.open("section", "aria-label", title)
	m.el("h2", title)
	if len(rows) == 0 {
		m.el("p", "None yet.", "class", "muted")
		m.close("section")
		return
	}
	if of > len(rows) {
		m.el("p", "The "+strconv.Itoa(len(rows))+" that used the most, of "+strconv.Itoa(of)+".", "class", "muted")
	}
	m.raw(`<div class="scroll"><table><thead><tr><th scope="col">Who</th><th scope="col">Turns</th><th scope="col">Input</th>` +
		`<th scope="col">Cached</th><th scope="col">Output</th><th scope="col">Total</th></tr></thead><tbody>`)
	for _, row := range rows {
		m.open("tr")
		m.open("td")
		if chats {
			m.el("a", row.Key, "href", chatURL(row.Key))
		} else {
			m.text(row.Key)
		}
		m.close("td")
		for _, n := range []int64{row.Turns, row.Input, row.CachedInput, row.Output, row.Total()} {
			m.el("td", strconv.FormatInt(n, 10), "class", "num")
		}
		m.close("tr")
	}
	m.raw(`</tbody></table></div>`)
	m.close("section")
}
