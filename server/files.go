package server

import (
	"io"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/media"
)

// inlineTypes are the only types a download may show in the browser:
// raster images, which run nothing. Everything else (HTML, SVG, PDF, text)
// is an attachment, so a file the model sent can never act as a page of
// ship's own origin.
var inlineTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// handleFile serves GET /api/files/{path...}: a file kept under
// .ship/files (what chat_send_file sent, what people sent the bot), with
// the API's token like every /api route. The file is opened through the
// media store, whose os.Root lets no name climb out of .ship/files, by
// ".." or by a symlink; in a cluster it fetches a file another replica
// kept. Whatever is missing, outside or not a regular file is the same
// 404, which never names a path on disk.
func (s *Server) handleFile(w http.ResponseWriter, r *http.Request) {
	rel, ok := filePath(r.PathValue("path"))
	if !ok || s.opts.Files == nil {
		writeNoFile(w, r)
		return
	}
	f, err := s.opts.Files.Open(r.Context(), media.File{Path: media.Dir + "/" + rel})
	if err != nil {
		// Not worth more than debug: a missing file is a client's typo;
		// the log still tells an operator what was refused.
		s.log.Debug().Err(err).Str("requestId", requestID(r.Context())).Msg("a file download was refused")
		writeNoFile(w, r)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		writeNoFile(w, r)
		return
	}
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		s.log.Error().Err(err).Str("requestId", requestID(r.Context())).Msg("reading a kept file for download")
		writeError(w, r, http.StatusInternalServerError, codeInternal, msgInternal)
		return
	}
	ct := contentType(path.Base(rel), head[:n])
	disposition := "attachment"
	if inlineTypes[ct] {
		disposition = "inline"
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Disposition", disposition+"; filename*=UTF-8''"+encodeRFC5987(downloadName(path.Base(rel))))
	// Even opened in a tab, an HTML or SVG file runs no script and loads
	// nothing: the sandbox gives it an opaque origin, not ship's.
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	// The answer needs the token: no shared cache may keep it. The kept
	// copies never change, so the browser itself may.
	h.Set("Cache-Control", "private")
	http.ServeContent(w, r, "", st.ModTime(), f)
}

// filePath checks the {path...} of a download: a clean, relative path
// with no ".." and no backslash, NUL or empty segment. The media store
// checks again; this answers such a request without touching the disk.
func filePath(p string) (string, bool) {
	if p == "" || strings.ContainsAny(p, "\\\x00") || strings.HasPrefix(p, "/") || path.Clean(p) != p {
		return "", false
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." || seg == "." || seg == "" {
			return "", false
		}
	}
	return p, true
}

// withFilePaths answers a download whose path is not clean (a "..", an
// encoded "%2e%2e", a doubled slash) with 404 before the mux sees it: the
// mux would otherwise redirect it to the cleaned path, outside /api/files.
func withFilePaths(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rest, ok := strings.CutPrefix(r.URL.Path, dispatch.FilesURLPrefix); ok {
			if _, clean := filePath(rest); !clean {
				writeNoFile(w, r)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func writeNoFile(w http.ResponseWriter, r *http.Request) {
	writeError(w, r, http.StatusNotFound, codeNotFound, "no such file")
}

// contentType is a file's type as chat_send_file decided it: what its
// bytes say, or its extension's type where the bytes are not telling
// (text, most documents); application/octet-stream when neither knows.
func contentType(name string, head []byte) string {
	t := http.DetectContentType(head)
	if t != "application/octet-stream" && !strings.HasPrefix(t, "text/plain") {
		return t
	}
	if ext := mime.TypeByExtension(strings.ToLower(path.Ext(name))); ext != "" {
		return ext
	}
	return t
}

// downloadName is the name a download is saved as: the kept file's name
// without the prefix the store put before it ("out<stamp>-<n>-chart.png"
// is "chart.png"; a received "<messageId>-photo.jpg" keeps its name, as
// its message id tells which message it came with).
func downloadName(base string) string {
	rest, ok := strings.CutPrefix(base, "out")
	if !ok {
		return base
	}
	parts := strings.SplitN(rest, "-", 3)
	if len(parts) != 3 || parts[0] == "" || parts[2] == "" || !allIn(parts[0], "0123456789abcdefghijklmnopqrstuvwxyz") || !allIn(parts[1], "0123456789") || parts[1] == "" {
		return base
	}
	return parts[2]
}

func allIn(s, set string) bool {
	for _, r := range s {
		if !strings.ContainsRune(set, r) {
			return false
		}
	}
	return true
}

// encodeRFC5987 percent-encodes name for the filename* parameter (RFC 5987
// section 3.2.1: only attr-char goes unencoded), so any name, also one
// with quotes, semicolons or non-ASCII letters, reaches the browser intact
// and cannot add a parameter of its own.
func encodeRFC5987(name string) string {
	const attr = "!#$&+-.^_`|~"
	var b strings.Builder
	for _, c := range []byte(name) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.IndexByte(attr, c) >= 0:
			b.WriteByte(c)
		default:
			b.WriteString("%" + strings.ToUpper(string("0123456789abcdef"[c>>4])+string("0123456789abcdef"[c&15])))
		}
	}
	return b.String()
}
