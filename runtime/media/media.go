// Package media keeps the files people send to the bot (photos, voice
// notes, documents) under the project's .ship/files folder, with a size cap
// per file and a bound on the folder, and names them for the chat log: the
// log entry references a file by its path, never holds its bytes.
package media

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/renameio/v2"

	"github.com/shipmyagent/ship/runtime/chat"

	"github.com/shipmyagent/ship/runtime/turn"
)

// Kinds of files.
const (
	KindImage = "image"
	KindVoice = "voice" // a voice note: speech recorded in the chat app
	KindAudio = "audio" // an audio file (music, a recording)
	KindVideo = "video"
	KindFile  = "file"
)

// File is a file stored for a message: the log and the journal keep
// references (turn.File), never bytes.
type File = turn.File

// FilesOf reads meta.files of a chat log entry: the []File ingress put
// there, or the same list as a JSON decoder returns it from the log.
func FilesOf(meta map[string]any) ([]File, error) {
	switch v := meta["files"].(type) {
	case nil:
		return nil, nil
	case []File:
		return v, nil
	}
	raw, err := json.Marshal(meta["files"])
	if err != nil {
		return nil, fmt.Errorf("reading meta.files: %w", err)
	}
	var files []File
	if err := json.Unmarshal(raw, &files); err != nil {
		return nil, fmt.Errorf("reading meta.files %.100s: %w", raw, err)
	}
	return files, nil
}

// Dir is where files are kept, relative to the project folder.
const Dir = ".ship/files"

// DefaultMaxFileBytes caps one file: the Bot API's own getFile limit, and
// the largest image OpenAI's API takes.
const DefaultMaxFileBytes = 20 << 20

// Bounds of the folder: the oldest files go first once it holds more than
// MaxTotalBytes, and files older than MaxAge go. A chat log entry keeps
// its reference; the file itself is then gone (the model only ever reads
// the files of the message it is answering). Exported so that a Shared
// store can keep its copies within the same bounds.
const (
	MaxTotalBytes = 1 << 30
	MaxAge        = 30 * 24 * time.Hour
	pruneEvery    = 10 * time.Minute
)

// ErrTooLarge is returned for a file over the cap.
var ErrTooLarge = errors.New("file too large")

// Store saves files under <project>/.ship/files. It is safe for concurrent
// use.
type Store struct {
	project  string
	maxBytes int64
	shared   Shared       // nil: a process on its own
	pruned   atomic.Int64 // unix nanos of the last prune
}

// Option changes a Store.
type Option func(*Store)

// NewStore returns a store for the project folder; maxFileBytes ≤ 0 means
// DefaultMaxFileBytes.
func NewStore(projectDir string, maxFileBytes int64, opts ...Option) *Store {
	if maxFileBytes <= 0 {
		maxFileBytes = DefaultMaxFileBytes
	}
	s := &Store{project: projectDir, maxBytes: maxFileBytes}
	for _, o := range opts {
		o(s)
	}
	return s
}

// MaxBytes is the cap of one file.
func (s *Store) MaxBytes() int64 { return s.maxBytes }

// Save copies r into the chat's folder as "<messageID>-<name>" and returns
// the reference. More than MaxBytes is refused with ErrTooLarge and leaves
// nothing behind; a half-written file never appears under its name. mime
// is what the platform says; the stored MIME is sniffed from the bytes
// when the platform says nothing more specific.
func (s *Store) Save(ctx context.Context, chatKey, messageID, kind, name, mime string, r io.Reader) (File, error) {
	stem, err := chat.EscapeChatKey(chatKey)
	if err != nil {
		return File{}, fmt.Errorf("saving file: %w", err)
	}
	base := SafeName(messageID) + "-" + SafeName(name)
	rel := path.Join(Dir, stem, base)
	dst := filepath.Join(s.project, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return File{}, fmt.Errorf("saving file: %w", err)
	}
	out, err := renameio.NewPendingFile(dst, renameio.WithPermissions(0o600))
	if err != nil {
		return File{}, fmt.Errorf("saving file: %w", err)
	}
	defer out.Cleanup() // after a successful replace it does nothing
	head := &headWriter{max: 512}
	n, err := io.Copy(io.MultiWriter(out, head), io.LimitReader(ctxReader{ctx, r}, s.maxBytes+1))
	if err != nil {
		return File{}, fmt.Errorf("saving file: %w", err)
	}
	if n > s.maxBytes {
		return File{}, fmt.Errorf("saving file: %w: over %s", ErrTooLarge, Size(s.maxBytes))
	}
	if err := out.CloseAtomicallyReplace(); err != nil {
		return File{}, fmt.Errorf("saving file: %w", err)
	}
	if err := s.share(ctx, dst, rel); err != nil {
		_ = os.Remove(dst) // not referenced: the message describes it as failed
		return File{}, fmt.Errorf("saving file: %w", err)
	}
	s.maybePrune()
	return File{Kind: kind, Path: rel, MIME: sniff(mime, head.b), Bytes: n, Name: name}, nil
}

// maybePrune keeps the folder within its bounds, at most once per
// pruneEvery: a directory walk on every download would put a scan in the
// receive path of every photo.
func (s *Store) maybePrune() {
	now := time.Now()
	last := s.pruned.Load()
	if now.UnixNano()-last < int64(pruneEvery) || !s.pruned.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	_ = PruneFiles(filepath.Join(s.project, filepath.FromSlash(Dir)), MaxTotalBytes, MaxAge, now)
}

// sniff picks the MIME type: the platform's when it names a specific one,
// else what the bytes look like.
func sniff(given string, head []byte) string {
	given = strings.TrimSpace(strings.ToLower(given))
	if given != "" && given != "application/octet-stream" {
		return given
	}
	if len(head) == 0 {
		return given
	}
	t := http.DetectContentType(head)
	if i := strings.IndexByte(t, ';'); i >= 0 {
		t = t[:i]
	}
	return t
}

// SafeName keeps a file name to one harmless path element.
func SafeName(name string) string {
	name = filepath.Base(strings.ReplaceAll(name, "\\", "/"))
	var b strings.Builder
	for _, r := range name {
		switch {
		case r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
			b.WriteRune(r)
		default:
			b.WriteRune('_')
		}
	}
	s := strings.TrimLeft(b.String(), ".")
	if len(s) > 100 {
		s = s[len(s)-100:]
	}
	if s == "" {
		return "file"
	}
	return s
}

// Size says a byte count the way people read it ("3.2 MB").
func Size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// headWriter keeps the first max bytes written to it.
type headWriter struct {
	max int
	b   []byte
}

func (h *headWriter) Write(p []byte) (int, error) {
	if room := h.max - len(h.b); room > 0 {
		h.b = append(h.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// ctxReader stops a copy once ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// PruneFiles keeps the files under dir within maxBytes and maxAge (by
// modification time), oldest first, and removes folders left empty.
func PruneFiles(dir string, maxBytes int64, maxAge time.Duration, now time.Time) error {
	type file struct {
		path string
		size int64
		mod  time.Time
	}
	var files []file
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return nil // removed meanwhile
		}
		files = append(files, file{p, info.Size(), info.ModTime()})
		total += info.Size()
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pruning %s: %w", dir, err)
	}
	slices.SortFunc(files, func(a, b file) int { return a.mod.Compare(b.mod) })
	for _, f := range files {
		if total <= maxBytes && now.Sub(f.mod) <= maxAge {
			break
		}
		if err := os.Remove(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("pruning %s: %w", dir, err)
		}
		total -= f.size
		_ = os.Remove(filepath.Dir(f.path)) // only succeeds when empty
	}
	return nil
}
