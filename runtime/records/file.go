package records

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/renameio/v2"
)

// File is a Table kept in one JSON file, for a store of a process that
// runs alone and must keep its records across restarts (questions asked
// in chats). Every write replaces the whole file atomically, so it suits
// tables of at most a few thousand small records; a crash leaves the old
// or the new file, never half of one. Safe for concurrent use within one
// process; a second process writing the same file is not supported.
type File struct {
	path string
	mem  *Memory
}

// fileImage is the file's content: the revision counter (so revisions
// only grow across restarts) and each record.
type fileImage struct {
	Rev     uint64            `json:"rev"`
	Records map[string]stored `json:"records"`
}

type stored struct {
	Value []byte `json:"value"`
	Rev   uint64 `json:"rev"`
}

// OpenFile opens the table kept at path, creating its folder; a missing
// file is an empty table. A file that does not parse is an error, not an
// empty table: starting empty would drop what it held.
func OpenFile(path string) (*File, error) {
	f := &File{path: path, mem: NewMemory()}
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("opening records %s: %w", path, err)
		}
		return f, nil
	case err != nil:
		return nil, fmt.Errorf("opening records %s: %w", path, err)
	}
	var img fileImage
	if err := json.Unmarshal(raw, &img); err != nil {
		return nil, fmt.Errorf("opening records %s: %w", path, err)
	}
	f.mem.rev = img.Rev
	for k, r := range img.Records {
		if r.Rev > f.mem.rev {
			f.mem.rev = r.Rev
		}
		f.mem.recs[k] = Record{Key: k, Value: r.Value, Rev: r.Rev}
	}
	return f, nil
}

// Get implements Table.
func (f *File) Get(ctx context.Context, key string) (Record, error) { return f.mem.Get(ctx, key) }

// List implements Table.
func (f *File) List(ctx context.Context) ([]Record, error) { return f.mem.List(ctx) }

// Put implements Table: the record is on disk when it returns.
func (f *File) Put(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m := f.mem
	m.mu.Lock()
	defer m.mu.Unlock()
	old, had := m.recs[key]
	if old.Rev != rev {
		return 0, ErrConflict
	}
	m.rev++
	m.recs[key] = Record{Key: key, Value: append([]byte(nil), value...), Rev: m.rev}
	if err := f.writeLocked(); err != nil {
		// Memory must not claim what the file does not hold.
		if had {
			m.recs[key] = old
		} else {
			delete(m.recs, key)
		}
		return 0, err
	}
	return m.rev, nil
}

// Delete implements Table.
func (f *File) Delete(ctx context.Context, key string, rev uint64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m := f.mem
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.recs[key]
	if !ok {
		return nil
	}
	if old.Rev != rev {
		return ErrConflict
	}
	delete(m.recs, key)
	if err := f.writeLocked(); err != nil {
		m.recs[key] = old
		return err
	}
	return nil
}

// writeLocked replaces the file with the table as it is; f.mem.mu is held.
func (f *File) writeLocked() error {
	img := fileImage{Rev: f.mem.rev, Records: make(map[string]stored, len(f.mem.recs))}
	for k, r := range f.mem.recs {
		img.Records[k] = stored{Value: r.Value, Rev: r.Rev}
	}
	raw, err := json.Marshal(img)
	if err != nil {
		return fmt.Errorf("writing records %s: %w", f.path, err)
	}
	if err := renameio.WriteFile(f.path, raw, 0o600); err != nil {
		return fmt.Errorf("writing records %s: %w", f.path, err)
	}
	return nil
}
