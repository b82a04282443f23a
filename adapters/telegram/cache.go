package telegram

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// Bounds of the download cache: files older than maxCacheAge go, and the
// oldest go first while the cache is over maxCacheBytes. The model is told
// where a file is when its message arrives; a week later it is history.
const (
	maxCacheBytes = 256 << 20
	maxCacheAge   = 7 * 24 * time.Hour
	// pruneEvery is how often at most the cache is checked against them;
	// a burst of downloads between checks is bounded by the Bot API's 20
	// MB per file.
	pruneEvery = 10 * time.Minute
)

// pruneFiles keeps the files under dir within maxBytes and maxAge (by
// modification time) and removes folders left empty.
func pruneFiles(dir string, maxBytes int64, maxAge time.Duration, now time.Time) error {
	type file struct {
		path string
		size int64
		mod  time.Time
	}
	var files []file
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return nil // removed meanwhile
		}
		files = append(files, file{path, info.Size(), info.ModTime()})
		total += info.Size()
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	sort.Slice(files, func(i, j int) bool { return files[i].mod.Before(files[j].mod) })
	for _, f := range files {
		if total <= maxBytes && now.Sub(f.mod) <= maxAge {
			break
		}
		if err := os.Remove(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		total -= f.size
		_ = os.Remove(filepath.Dir(f.path)) // only succeeds when empty
	}
	return nil
}
