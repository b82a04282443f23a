package console

import (
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	plainmd "github.com/shipmyagent/ship/adapters/markdown"
)

// What the Chats page shows of each chat and search hit. 300 chats whose
// last messages were long once made a 2.8 MB page: a preview is one line
// of at most previewRunes, the list is paged by chatsPerPage, and a long
// search hit is shown as clipped plain text (the chat shows it in full).
const (
	chatsPerPage = 100
	previewRunes = 200
	titleRunes   = 80
	hitRunes     = 600
)

// clipRunes makes s one line (every run of white space one space) of at
// most n runes, cut between whole runes and marked with "…" when cut.
func clipRunes(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i = range s {
		if count == n-1 {
			break
		}
		count++
	}
	return s[:i] + "…"
}

// preview is the one-line preview of a chat's last entry.
func preview(role, text string) string {
	prefix := map[string]string{"assistant": "ship: ", "tool": "⚙ "}[role]
	if role == "assistant" {
		text = plainmd.Plain(text) // the words, not the markers
	}
	return prefix + clipRunes(text, previewRunes)
}

// clipHit shortens a long search hit to plain text.
func clipHit(v entryView) entryView {
	if utf8.RuneCountInString(v.Text) <= hitRunes {
		return v
	}
	text := v.Text
	if v.HTML != "" {
		text = plainmd.Plain(text)
	}
	v.Text, v.HTML = clipRunes(text, hitRunes), ""
	return v
}

// pageFrom reads the from= of a Chats page: the number of more recent
// chats skipped; anything but a whole number from 0 is 0.
func pageFrom(raw string) int {
	n, err := strconv.Atoi(raw)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// chatsPageURL is the Chats page listing from the from-th most recent chat
// of platform ("" for all).
func chatsPageURL(platform string, from int) string {
	q := url.Values{}
	if platform != "" {
		q.Set("platform", platform)
	}
	if from > 0 {
		q.Set("from", strconv.Itoa(from))
	}
	if len(q) == 0 {
		return "/chats"
	}
	return "/chats?" + q.Encode()
}

// writePager says which chats the page lists and links the pages around it.
func (d chatsData) writePager(m *markup) {
	if d.Total <= len(d.Chats) {
		return
	}
	m.open("nav", "class", "pager", "aria-label", "More chats")
	m.el("span", "Chats "+strconv.Itoa(d.From+1)+"–"+strconv.Itoa(d.From+len(d.Chats))+" of "+strconv.Itoa(d.Total)+", most recent first.", "class", "muted")
	if d.From > 0 {
		m.raw(" ")
		m.el("a", "← More recent", "href", chatsPageURL(d.Platform, max(d.From-chatsPerPage, 0)), "rel", "prev")
	}
	if next := d.From + len(d.Chats); next < d.Total {
		m.raw(" ")
		m.el("a", "Older chats →", "href", chatsPageURL(d.Platform, next), "rel", "next")
	}
	m.close("nav")
}
