package console

import (
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/media"
)

// entryView is one chat log entry as the Chat page and search show it.
type entryView struct {
	ChatKey string
	Role    string
	Who     string
	Text    string
	At      time.Time
	Tool    string
	Outcome string
	Images  []string // /console/files URLs
	Files   []string // names of other files
	// HTML is the entry's text as rendered Markdown (the assistant's
	// replies); "" shows Text as it is.
	HTML renderedHTML
	// Downloads are the files the bot sent that are not shown inline.
	Downloads []download
	// Question is set on the entry of a question the bot asked.
	Question *questionView
	Approval string
	// Undelivered is set on the chat log's mark of a reply the user did
	// not get: "not delivered: <reason>", or "part 2 of 3 not delivered:
	// <reason>" when the parts before it arrived.
	Undelivered string
}

// view turns an entry into what the page shows. What people wrote stays
// text, escaped as it is written: a Telegram user's "*" or "1." is what
// they typed, not formatting they asked for, and they never saw it
// rendered either. What the bot wrote is the model's Markdown, which the
// platforms show formatted: the console renders it the same way (see
// markdown.go).
func (c *Console) view(e chat.ChatLogEntryV1) entryView {
	v := entryView{ChatKey: e.ChatKey, Role: e.Role, Text: e.Text, At: time.UnixMilli(e.TS)}
	switch e.Role {
	case chat.RoleUser:
		v.Who = e.UserID
		if u, ok := e.Meta["username"].(string); ok && u != "" {
			v.Who = u
		}
	case chat.RoleAssistant:
		v.Who = "ship"
		text := e.Text
		switch e.Meta["via"] {
		case dispatch.ViaFiles:
			text = c.sentFiles(&v, e)
		case dispatch.ViaAsk:
			text = questionOf(&v, e)
		}
		v.Text = text
		if e.Meta["delivery"] != "failed" && strings.TrimSpace(text) != "" {
			v.HTML = c.md.render(text)
		}
	case chat.RoleTool:
		v.Tool, _ = e.Meta["tool"].(string)
		v.Outcome, _ = e.Meta["outcome"].(string)
	}
	v.Approval, _ = e.Meta["approval"].(string)
	if e.Meta["delivery"] == "failed" {
		v.Undelivered = undeliveredLine(e.Meta)
	}
	files, _ := media.FilesOf(e.Meta) // a malformed list shows no files
	for _, f := range files {
		switch {
		case f.Path != "" && f.Kind == media.KindImage:
			v.Images = append(v.Images, "/console/files?path="+url.QueryEscape(f.Path))
		case f.Name != "":
			v.Files = append(v.Files, f.Name)
		case f.Path != "":
			v.Files = append(v.Files, path.Base(f.Path))
		}
	}
	return v
}

// undeliveredLine is what the Chat page says about a reply that did not
// reach the user (see dispatch.Deliverer.LogUndelivered): the platform's
// reason, and which part failed.
func undeliveredLine(meta map[string]any) string {
	reason, _ := meta["reason"].(string)
	if reason == "" {
		reason = "the platform did not say why"
	}
	part, _ := meta["part"].(float64) // numbers come back from JSON as float64
	parts, _ := meta["parts"].(float64)
	if part > 0 && parts > 0 {
		return fmt.Sprintf("part %d of %d not delivered: %s", int(part), int(parts), reason)
	}
	return "not delivered: " + reason
}

// handleFile serves a file kept under .ship/files: a received image or
// one the bot sent for its thumbnail, any other file the bot sent as a
// download. Only files under .ship/files are served, opened by the file
// store, which lets no path climb out (and, in a cluster, fetches a file
// another replica received). Nothing it serves can act as a page of the
// console's origin: only raster images are shown inline, everything else
// is an attachment, never sniffed, and a sandbox CSP disarms what a
// browser might still render.
func (c *Console) handleFile(w http.ResponseWriter, r *http.Request) {
	rel, ok := strings.CutPrefix(path.Clean("/"+r.URL.Query().Get("path")), "/"+media.Dir+"/")
	if !ok || c.opts.Files == nil {
		http.NotFound(w, r)
		return
	}
	f, err := c.opts.Files.Open(r.Context(), media.File{Path: media.Dir + "/" + rel})
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.log.Warn().Err(err).Msg("opening a received file for the console")
		}
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.IsDir() {
		http.NotFound(w, r)
		return
	}
	ct, _, _ := strings.Cut(mime.TypeByExtension(strings.ToLower(path.Ext(rel))), ";")
	if !inlineImages[ct] {
		// Only raster images are shown inline; anything else (an SVG or
		// an HTML file can carry script) is offered as a download.
		name := media.SafeName(r.URL.Query().Get("name"))
		if r.URL.Query().Get("name") == "" {
			name = path.Base(rel)
		}
		w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
		ct = "application/octet-stream"
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Cache-Control", "private, no-cache")
	http.ServeContent(w, r, "", st.ModTime(), f)
}
