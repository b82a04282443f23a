package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/shipmyagent/ship/runtime/chat"
)

// NotesService is the long-term notes as the console shows and edits
// them (runtime/memory, adapted by the binary): a chat's notes (kind
// "chat", keyed by chatKey) and notes about a person (kind "person",
// keyed by identity).
type NotesService interface {
	// List is every set of notes there is.
	List(ctx context.Context) ([]Notes, error)
	// Read is one set's text ("" when there is none).
	Read(ctx context.Context, kind, id string) (string, error)
	// Write replaces one set's text; "" removes it.
	Write(ctx context.Context, kind, id, text string) error
	// MaxBytes bounds one set of notes.
	MaxBytes() int
}

// Notes is one set of notes.
type Notes struct {
	Kind, ID, Text string
}

// notesKinds are the kinds of notes, as the console names them.
var notesKinds = map[string]string{"chat": "Chat", "person": "Person"}

// notesTarget reads and checks which notes a request names (kind and id),
// answering itself when they name none.
func notesTarget(w http.ResponseWriter, kind, id string) bool {
	if _, ok := notesKinds[kind]; !ok {
		plain(w, http.StatusBadRequest, `kind must be "chat" or "person".`)
		return false
	}
	if _, err := chat.EscapeChatKey(id); err != nil {
		plain(w, http.StatusBadRequest, "That is not a chat key or an identity (empty, or too long).")
		return false
	}
	return true
}

type notesListData struct {
	Enabled bool
	Notes   []Notes
}

func (c *Console) handleNotes(w http.ResponseWriter, r *http.Request) {
	d := notesListData{Enabled: c.opts.Notes != nil}
	if d.Enabled {
		list, err := c.opts.Notes.List(r.Context())
		if err != nil {
			c.fail(w, r, err)
			return
		}
		d.Notes = list
	}
	c.render(w, r, "Notes", d.write)
}

func notesURL(kind, id string) string {
	return "/notes/edit?" + url.Values{"kind": {kind}, "id": {id}}.Encode()
}

func (d notesListData) write(m *markup) {
	m.raw(`<main id="main"><h1>Notes</h1>`)
	if !d.Enabled {
		m.raw(`<p class="empty">Long-term notes are off here (<code>memory.notes</code> in ship.json).</p></main>`)
		return
	}
	m.raw(`<p class="muted">What ship keeps in mind about a chat, or a person, across conversations: ` +
		`Markdown it writes with <code>memory_write</code> and puts into that chat's prompt. Edit it here, or the files under <code>.ship/memory/</code>.</p>`)
	m.raw(`<form class="search" method="get" action="/notes/edit"><label for="kind">Open notes of</label><select id="kind" name="kind">` +
		`<option value="chat">a chat</option><option value="person">a person</option></select>` +
		`<label for="id">Chat key or identity</label><input id="id" name="id" required placeholder="telegram:chat:42 or telegram:42">` +
		`<button type="submit">Open</button></form>`)
	if len(d.Notes) == 0 {
		m.raw(`<p class="empty">No notes yet. Ask ship to remember something in a chat.</p></main>`)
		return
	}
	m.raw(`<div class="scroll"><table><thead><tr><th scope="col">Notes</th><th scope="col">Size</th><th scope="col">Begins</th></tr></thead><tbody>`)
	for _, n := range d.Notes {
		m.raw("<tr><td>")
		m.el("span", notesKinds[n.Kind], "class", "tag")
		m.raw(" ")
		m.el("a", n.ID, "href", notesURL(n.Kind, n.ID))
		m.raw("</td><td>")
		m.text(strconv.Itoa(len(n.Text)) + " B")
		m.raw("</td><td>")
		first, _, _ := strings.Cut(strings.TrimSpace(n.Text), "\n")
		m.el("span", first, "class", "muted clip")
		m.raw("</td></tr>")
	}
	m.raw(`</tbody></table></div></main>`)
}

type notesEditData struct {
	Kind, ID, Text string
	MaxBytes       int
}

// handleNotesEdit shows one set of notes in a form that saves them.
func (c *Console) handleNotesEdit(w http.ResponseWriter, r *http.Request) {
	if c.opts.Notes == nil {
		plain(w, http.StatusNotFound, "Long-term notes are off here.")
		return
	}
	q := r.URL.Query()
	d := notesEditData{Kind: q.Get("kind"), ID: strings.TrimSpace(q.Get("id")), MaxBytes: c.opts.Notes.MaxBytes()}
	if !notesTarget(w, d.Kind, d.ID) {
		return
	}
	text, err := c.opts.Notes.Read(r.Context(), d.Kind, d.ID)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	d.Text = text
	c.render(w, r, "Notes", d.write)
}

func (d notesEditData) write(m *markup) {
	m.raw(`<main id="main"><h1>Notes</h1>`)
	m.open("p", "class", "muted")
	m.text(notesKinds[d.Kind] + " ")
	m.el("code", d.ID)
	if d.Kind == "chat" {
		m.text(" · ")
		m.el("a", "its chat", "href", chatURL(d.ID))
	}
	m.raw(` · <a href="/notes">all notes</a></p>`)
	m.raw(`<form class="send" method="post" action="/console/notes" hx-post="/console/notes" hx-swap="none" data-after="answered">`)
	m.open("input", "type", "hidden", "name", "kind", "value", d.Kind)
	m.open("input", "type", "hidden", "name", "id", "value", d.ID)
	m.raw(`<label for="text">Markdown</label>`)
	m.open("textarea", "id", "text", "name", "text", "rows", "16")
	// A newline right after <textarea> is dropped by the HTML parser:
	// this one, so one the notes begin with is kept.
	m.raw("\n")
	m.text(d.Text)
	m.close("textarea")
	m.open("p", "class", "muted")
	m.textf("At most %d bytes. Saving an empty text removes the notes. The chat's next turn sees what you save.", d.MaxBytes)
	m.close("p")
	m.raw(`<button class="primary" type="submit">Save</button></form></main>`)
}

// handleNotesSave replaces one set of notes with the posted text; past
// the bound nothing changes and the answer says why.
func (c *Console) handleNotesSave(w http.ResponseWriter, r *http.Request) {
	if c.opts.Notes == nil {
		plain(w, http.StatusNotFound, "Long-term notes are off here.")
		return
	}
	kind, id := r.PostFormValue("kind"), strings.TrimSpace(r.PostFormValue("id"))
	if !notesTarget(w, kind, id) {
		return
	}
	// Browsers send a textarea's lines ending in CRLF; the files are
	// plain Markdown with LF, as an editor on the server keeps them.
	text := strings.ReplaceAll(r.PostFormValue("text"), "\r\n", "\n")
	if max := c.opts.Notes.MaxBytes(); len(text) > max {
		plain(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("Not saved: the notes are %d bytes and the limit is %d. Shorten them.", len(text), max))
		return
	}
	if strings.ContainsRune(text, 0) || !utf8.ValidString(text) {
		plain(w, http.StatusBadRequest, "Not saved: the notes must be plain text.")
		return
	}
	if err := c.opts.Notes.Write(r.Context(), kind, id, text); err != nil {
		c.fail(w, r, err)
		return
	}
	c.log.Info().Str("notes", kind+" "+id).Int("bytes", len(text)).Msg("notes saved in the console")
	plain(w, http.StatusOK, fmt.Sprintf("Saved (%d bytes).", len(text)))
}
