package console

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"
)

// pageFiles maps each page to its template file; every page is parsed
// together with the layout.
var pageFiles = map[string]string{
	"overview":  "templates/overview.html",
	"chats":     "templates/chats.html",
	"chat":      "templates/chat.html",
	"entries":   "templates/entry.html",
	"approvals": "templates/approvals.html",
	"tasks":     "templates/tasks.html",
	"tools":     "templates/tools.html",
	"login":     "templates/login.html",
}

// parse reads the templates once; a template that does not parse is a
// build mistake that every console test catches.
func (c *Console) parse() error {
	c.parseOnce.Do(func() {
		assets, err := assetVersions()
		if err != nil {
			c.parseErr = err
			return
		}
		funcs := template.FuncMap{
			"asset": func(name string) string { return "/console/static/" + name + "?v=" + assets[name] },
			"ago":   ago,
			"clock": clock,
			"ms":    func(ms int64) time.Time { return time.UnixMilli(ms) },
			"nav":   func() any { return navigation },
			"current": func(nav, path string) bool {
				return nav == path || nav != "/" && strings.HasPrefix(path, nav+"/")
			},
			"chatURL": chatURL,
		}
		c.pages = make(map[string]*template.Template, len(pageFiles))
		for name, file := range pageFiles {
			files := []string{"templates/layout.html", "templates/entry.html"}
			if file != files[1] {
				files = append(files, file)
			}
			t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, files...)
			if err != nil {
				c.parseErr = fmt.Errorf("parsing console template %s: %w", file, err)
				return
			}
			c.pages[name] = t
		}
	})
	return c.parseErr
}

// assetVersions is a short content hash per static file: asset URLs carry
// it, so a browser may cache them for good and still gets a new file
// after an upgrade.
func assetVersions() (map[string]string, error) {
	out := make(map[string]string)
	err := fs.WalkDir(staticFS, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := staticFS.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[path.Base(p)] = hex.EncodeToString(sum[:6])
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading console assets: %w", err)
	}
	return out, nil
}

// handleStatic serves the embedded scripts, styles and licence.
func handleStatic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	b, err := staticFS.ReadFile("static/" + name)
	if err != nil || strings.Contains(name, "/") {
		http.NotFound(w, r)
		return
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("X-Content-Type-Options", "nosniff")
	if r.URL.Query().Get("v") != "" {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	}
	_, _ = w.Write(b)
}

// chatURL is the Chat page of key.
func chatURL(key string) string { return "/chats/" + url.PathEscape(key) }

// renderLogin shows the login page, with msg when the last try failed.
func (c *Console) renderLogin(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if err := c.parse(); err != nil {
		c.fail(w, r, err)
		return
	}
	next := safeNext(r.URL.Query().Get("next"))
	if next == "/" {
		next = ""
	}
	setPageHeaders(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	data := struct{ Next, Error string }{next, msg}
	if err := c.pages["login"].ExecuteTemplate(w, "login", data); err != nil {
		c.log.Error().Err(err).Msg("rendering the login page")
	}
}

// ago is "12 s ago", "5 min ago", "3 h ago", "2 days ago".
func ago(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := time.Since(t)
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < time.Minute:
		s = fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		s = fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%d h", int(d.Hours()))
	default:
		s = fmt.Sprintf("%d days", int(d.Hours()/24))
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

// clock is a time in the server's zone, without the date when it is today.
func clock(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	t = t.Local()
	if y, m, d := t.Date(); y == time.Now().Year() && m == time.Now().Month() && d == time.Now().Day() {
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02 15:04")
}

// uptime is "3 d 4 h", "2 h 5 min", "40 s".
func uptime(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%d h %d min", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%d d %d h", int(d.Hours()/24), int(d.Hours())%24)
}
