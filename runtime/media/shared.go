package media

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Shared keeps received files where every replica of a cluster can fetch
// them: the replica that receives a platform event saves the file, but the
// turn may run on another replica (the one holding the chat's queue
// partition). runtime/cluster implements it over the JetStream Object
// Store; a process on its own has none and pays nothing.
//
// Names are a file's path below .ship/files ("<escaped chat key>/<id>-<name>"),
// already checked by the Store; an implementation must refuse any other
// shape as well (an absolute name, a ".." element), so that a name read
// back from a log can never lead outside the folder.
type Shared interface {
	// Put stores the bytes of r under name, replacing what was there. r
	// is read from its start; an implementation may seek back to the
	// start to try again.
	Put(ctx context.Context, name string, r io.ReadSeeker) error
	// Get writes the bytes stored under name to w. More than max bytes is
	// refused with an error wrapping ErrTooLarge (before anything is
	// written when the size is known up front); a name never put, or
	// gone (pruned, expired), is an error wrapping fs.ErrNotExist.
	Get(ctx context.Context, name string, w io.Writer, max int64) error
}

// WithShared makes the store put every saved file into sh as well, and
// fetch from sh a file that is not on this replica's disk.
func WithShared(sh Shared) Option {
	return func(s *Store) { s.shared = sh }
}

// share puts a saved file (dst on disk, rel its project-relative path)
// into the shared store, before Save returns: Save's caller queues the
// message next, and whichever replica runs its turn must find the file.
func (s *Store) share(ctx context.Context, dst, rel string) error {
	if s.shared == nil {
		return nil
	}
	name, err := sharedName(rel)
	if err != nil {
		return err
	}
	fh, err := os.Open(dst)
	if err != nil {
		return fmt.Errorf("sharing %s with the other replicas: %w", rel, err)
	}
	defer fh.Close()
	if err := s.shared.Put(ctx, name, fh); err != nil {
		return fmt.Errorf("sharing %s with the other replicas: %w", rel, err)
	}
	return nil
}

// Read returns the bytes of a stored file, refusing more than max bytes and
// any path outside the files folder (a reference read back from a log
// must not lead anywhere else, nor through a symlink out of it). A file
// another replica received is fetched from the shared store into its
// place on this replica's disk first, under the same checks; one over max
// is not fetched.
func (s *Store) Read(ctx context.Context, f File, max int64) ([]byte, error) {
	fh, err := s.open(ctx, f, max)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, max+1))
	if err != nil {
		return nil, fmt.Errorf("reading file %s: %w", f.Path, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("reading file %s: %w: over %s", f.Path, ErrTooLarge, Size(max))
	}
	return b, nil
}

// Open opens a stored file as Read reads it (the console serves it from
// there), fetching it first when only another replica has it.
func (s *Store) Open(ctx context.Context, f File) (*os.File, error) {
	return s.open(ctx, f, s.maxBytes)
}

// Fetch makes sure f is on this replica's disk, fetching it when only
// another replica has it: the text the model reads names the file's path,
// and a tool may open it there.
func (s *Store) Fetch(ctx context.Context, f File) error {
	fh, err := s.open(ctx, f, s.maxBytes)
	if err != nil {
		return err
	}
	return fh.Close()
}

// open opens f under the files folder, fetching it (at most max bytes)
// from the shared store when it is not on disk.
func (s *Store) open(ctx context.Context, f File, max int64) (*os.File, error) {
	name, err := sharedName(f.Path)
	if err != nil {
		return nil, err
	}
	root, err := s.openRoot()
	if err != nil {
		return nil, fmt.Errorf("reading file %s: %w", f.Path, err)
	}
	defer root.Close() // what it opened stays open
	fh, err := root.Open(filepath.FromSlash(name))
	if err == nil || s.shared == nil || !errors.Is(err, fs.ErrNotExist) {
		return fh, wrapRead(f.Path, err)
	}
	if err := s.fetch(ctx, root, name, max); err != nil {
		return nil, fmt.Errorf("reading file %s: not on this replica, and fetching it from the other replicas: %w", f.Path, err)
	}
	fh, err = root.Open(filepath.FromSlash(name))
	return fh, wrapRead(f.Path, err)
}

// sharedName is a file's path below the files folder, checked: the same
// rule the single process always applied to a path from a log (under
// .ship/files, no ".." anywhere).
func sharedName(p string) (string, error) {
	rel := path.Clean(p)
	name, ok := strings.CutPrefix(rel, Dir+"/")
	if !ok || strings.Contains(rel, "..") || strings.ContainsRune(rel, '\\') {
		return "", fmt.Errorf("reading file %q: not under %s", p, Dir)
	}
	return name, nil
}

// openRoot opens the files folder as an os.Root, so that no name opened
// through it can climb out, by ".." or by a symlink. With a shared store
// the folder is created: a replica that never received a file still
// fetches into it.
func (s *Store) openRoot() (*os.Root, error) {
	dir := filepath.Join(s.project, filepath.FromSlash(Dir))
	if s.shared != nil {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
	}
	return os.OpenRoot(dir)
}

func wrapRead(p string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("reading file %s: %w", p, err)
}

// fetch copies name from the shared store to its place under root: into
// a hidden temporary file first, renamed once complete, so a reader never
// sees half a file and two turns fetching the same file at once both end
// with the whole of it. The copy stays, as a received file would, until
// PruneFiles takes it.
func (s *Store) fetch(ctx context.Context, root *os.Root, name string, max int64) error {
	dir := path.Dir(name)
	if err := root.MkdirAll(filepath.FromSlash(dir), 0o700); err != nil {
		return err
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.FromSlash(path.Join(dir, ".fetch-"+hex.EncodeToString(rnd[:])+"-"+path.Base(name)))
	out, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			_ = out.Close()
			_ = root.Remove(tmp)
		}
	}()
	// The store's own cap holds whatever the shared store says.
	if err := s.shared.Get(ctx, name, &capWriter{w: out, max: max}, max); err != nil {
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	if err := root.Rename(tmp, filepath.FromSlash(name)); err != nil {
		return err
	}
	done = true
	return nil
}

// capWriter refuses to take more than max bytes in all.
type capWriter struct {
	w   io.Writer
	max int64
	n   int64
}

func (c *capWriter) Write(p []byte) (int, error) {
	if c.n+int64(len(p)) > c.max {
		return 0, fmt.Errorf("%w: over %s", ErrTooLarge, Size(c.max))
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
