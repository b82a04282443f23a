package console

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"
)

// asset is the URL of a static file, versioned by its content.
func (c *Console) asset(name string) string {
	c.assetsOnce.Do(func() {
		var err error
		if c.assets, err = assetVersions(); err != nil {
			c.log.Error().Err(err).Msg("hashing console assets")
		}
	})
	return "/console/static/" + name + "?v=" + c.assets[name]
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
	t, now := t.Local(), time.Now()
	if y, m, d := t.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
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
