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
	"github.com/shipmyagent/ship/runtime/media"
)

// entryView is one chat log entry as the Chat page and search show it.
type entryView struct {
	ChatKey  string
	Role     string
	Who      string
	Text     string
	At       time.Time
	Tool     string
	Outcome  string
	Images   []string // /console/files URLs
	Files    []string // names of other files
	Approval string
	// Undelivered is set on the chat log's mark of a reply the user did
	// not get: "not delivered: <reason>", or "part 2 of 3 not delivered:
	// <reason>" when the parts before it arrived.
	Undelivered string
}

// view turns an entry into what the page shows. Text stays text: the
// template escapes it.
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

// handleFile serves a received image for its thumbnail. Only files under
// .ship/files are served, opened by the file store, which lets no path
// climb out (and, in a cluster, fetches a file another replica received).
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
	ct := mime.TypeByExtension(path.Ext(rel))
	if !strings.HasPrefix(ct, "image/") || ct == "image/svg+xml" {
		// Only raster images are shown inline; anything else (an SVG can
		// carry script) is offered as a download.
		w.Header().Set("Content-Disposition", "attachment")
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'none'")
	http.ServeContent(w, r, "", st.ModTime(), f)
}
