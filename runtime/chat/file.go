package chat

import (
	"container/list"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// errHandleBroken is returned to an appender that picked up a handle just
// before it was given up on; the next Append opens the file afresh.
var errHandleBroken = errors.New("chat file handle unusable after an earlier error; retry")

// chatFile is an open live file of one chat, shared by all its appenders.
//
// Lock order: writeMu, then syncMu, then Store.mu; Store.mu is never held
// while taking either of the others.
type chatFile struct {
	stem string
	path string

	// Guarded by Store.mu.
	refs int           // appenders using the handle; it is closed only at zero
	elem *list.Element // position in Store.lru; nil once dropped from the cache

	ready   chan struct{} // closed when opening finished
	openErr error         // written before ready is closed

	// broken is set after a failed fsync or roll: the handle is dropped and
	// the file reopened (which also repairs a torn last line) by a later
	// Append.
	broken atomic.Bool

	writeMu sync.Mutex // serialises writes and rolls
	f       *os.File   // replaced only with writeMu and syncMu both held
	size    int64      // guarded by writeMu; Stat-ed once when opened
	torn    bool       // guarded by writeMu: the file does not end with '\n'
	written atomic.Uint64

	syncMu  sync.Mutex
	synced  uint64 // guarded by syncMu: writes covered by a finished fsync
	syncErr error  // guarded by syncMu: sticky, see broken
}

// acquire returns the open handle of stem's live file, opening it if needed.
// The caller must release it.
func (s *Store) acquire(stem string) (*chatFile, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrStoreClosed
	}
	if cf := s.files[stem]; cf != nil && !cf.broken.Load() {
		cf.refs++
		s.lru.MoveToFront(cf.elem)
		s.mu.Unlock()
		<-cf.ready
		if cf.openErr != nil {
			s.release(cf)
			return nil, cf.openErr
		}
		return cf, nil
	} else if cf != nil {
		_ = s.dropLocked(cf) // see release for why the error is dropped
	}
	cf := &chatFile{
		stem:  stem,
		path:  filepath.Join(s.dir, liveFileName(stem)),
		refs:  1,
		ready: make(chan struct{}),
	}
	cf.elem = s.lru.PushFront(cf)
	s.files[stem] = cf
	s.evictLocked()
	s.mu.Unlock()

	// Opened outside Store.mu so that a slow disk stalls only this chat;
	// others asking for it meanwhile wait on ready.
	cf.openErr = s.openLive(cf)
	if cf.openErr != nil {
		cf.broken.Store(true)
	}
	close(cf.ready)
	if cf.openErr != nil {
		s.release(cf)
		return nil, cf.openErr
	}
	return cf, nil
}

// release gives back a handle from acquire.
func (s *Store) release(cf *chatFile) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cf.refs--
	switch {
	case cf.elem != nil && cf.broken.Load():
		_ = s.dropLocked(cf)
	case cf.elem == nil && cf.refs == 0:
		// Dropped (evicted, broken or store closed) while in use. A close
		// error is of no use to anyone here: with DurabilityAlways every
		// entry was already fsynced, and without it nothing was promised.
		_ = cf.closeFile()
	}
	s.evictLocked()
}

// evictLocked closes the least recently used idle handles until at most
// maxOpen remain. Handles in use are skipped, so the cache can briefly
// exceed maxOpen while many chats append at once.
func (s *Store) evictLocked() {
	for e := s.lru.Back(); e != nil && len(s.files) > s.maxOpen; {
		prev := e.Prev()
		if cf := e.Value.(*chatFile); cf.refs == 0 {
			_ = s.dropLocked(cf) // see release for why the error is dropped
		}
		e = prev
	}
}

// dropLocked removes cf from the cache and closes it unless it is in use, in
// which case the last release closes it.
func (s *Store) dropLocked(cf *chatFile) error {
	if cf.elem == nil {
		return nil
	}
	s.lru.Remove(cf.elem)
	cf.elem = nil
	if s.files[cf.stem] == cf {
		delete(s.files, cf.stem)
	}
	if cf.refs == 0 {
		return cf.closeFile()
	}
	return nil
}

// closeFile closes the handle. Only called once nobody uses cf.
func (cf *chatFile) closeFile() error {
	if cf.f == nil {
		return nil
	}
	err := cf.f.Close()
	cf.f = nil
	if err != nil {
		return fmt.Errorf("close chat file: %w", err)
	}
	return nil
}

// openLive opens cf's live file for appending, creating it if missing.
func (s *Store) openLive(cf *chatFile) error {
	f, created, err := openAppend(cf.path)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("open chat file: %w", err)
	}
	size := fi.Size()
	torn := false
	if size > 0 {
		// A crash can leave a partial last line. The next write starts with
		// '\n' so its entry is never glued onto the torn one.
		var last [1]byte
		if _, err := f.ReadAt(last[:], size-1); err != nil {
			f.Close()
			return fmt.Errorf("open chat file: read last byte: %w", err)
		}
		torn = last[0] != '\n'
	}
	if created && s.durability == DurabilityAlways {
		if err := syncDir(s.dir); err != nil {
			f.Close()
			return err
		}
	}
	cf.f, cf.size, cf.torn = f, size, torn
	return nil
}

// openAppend opens path for appending (and reading its last byte), creating
// it if needed, and reports whether it was created.
func openAppend(path string) (f *os.File, created bool, err error) {
	f, err = os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		return f, true, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return nil, false, fmt.Errorf("open chat file: %w", err)
	}
	f, err = os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return nil, false, fmt.Errorf("open chat file: %w", err)
	}
	return f, false, nil
}

// writeLine appends line (ending in '\n') with a single write and returns its
// write sequence number for waitSynced. It rolls the file when it has grown
// past the segment size.
func (s *Store) writeLine(cf *chatFile, line []byte) (uint64, error) {
	cf.writeMu.Lock()
	defer cf.writeMu.Unlock()
	if cf.broken.Load() || cf.f == nil {
		return 0, errHandleBroken
	}
	data := line
	if cf.torn {
		// One write call, so the repair and the entry cannot be separated.
		data = make([]byte, 0, len(line)+1)
		data = append(append(data, '\n'), line...)
	}
	n, err := cf.f.Write(data)
	cf.size += int64(n)
	if err != nil {
		// A short write (a full disk, say) leaves a partial line behind: the
		// next write must end it first.
		if n > 0 {
			cf.torn = data[n-1] != '\n'
		}
		return 0, fmt.Errorf("write chat file: %w", err)
	}
	cf.torn = false
	seq := cf.written.Add(1)
	if cf.size > s.segmentBytes {
		// The entry is written either way. A failed roll leaves the live file
		// in place, so the next append simply tries again; a failed fsync is
		// reported to the appenders through syncErr.
		_ = s.roll(cf)
	}
	return seq, nil
}

// roll archives the live file under the next seq and starts a new one.
// cf.writeMu must be held.
func (s *Store) roll(cf *chatFile) error {
	cf.syncMu.Lock()
	defer cf.syncMu.Unlock()
	if s.durability == DurabilityAlways {
		// Appenders still waiting for their fsync must not lose the file
		// they wrote to, so sync it here on their behalf.
		if err := cf.syncLocked(); err != nil {
			return err
		}
	}
	seqs := s.archiveSeqs(cf.stem)
	seq := 1
	if len(seqs) > 0 {
		seq = seqs[len(seqs)-1] + 1
	}
	archive := filepath.Join(s.dir, archiveFileName(cf.stem, seq))
	if err := os.Rename(cf.path, archive); err != nil {
		return fmt.Errorf("archive chat file: %w", err)
	}
	f, _, err := openAppend(cf.path)
	if err != nil {
		// Put the file back so appends keep going to the live name.
		if rerr := os.Rename(archive, cf.path); rerr != nil {
			cf.broken.Store(true)
		}
		return fmt.Errorf("start new chat file: %w", err)
	}
	s.addArchive(cf.stem, seq)
	old := cf.f
	cf.f, cf.size, cf.torn = f, 0, false
	// Already fsynced above when durability matters; a close error would
	// change nothing.
	_ = old.Close()
	if s.durability == DurabilityAlways {
		return syncDir(s.dir)
	}
	return nil
}

// waitSynced returns once an fsync that started after write seq finished
// has completed. Appenders that arrive while one of them is in fsync block on
// syncMu and usually find their write covered when they get it: one fsync
// serves the whole group.
func (cf *chatFile) waitSynced(seq uint64) error {
	cf.syncMu.Lock()
	defer cf.syncMu.Unlock()
	if cf.syncErr != nil {
		return cf.syncErr
	}
	if cf.synced >= seq {
		return nil
	}
	return cf.syncLocked()
}

// syncLocked fsyncs the file, covering every write counted so far. A write
// is counted only after it returned, so all of them precede this fsync.
// cf.syncMu must be held.
func (cf *chatFile) syncLocked() error {
	if cf.syncErr != nil {
		return cf.syncErr
	}
	target := cf.written.Load()
	if cf.synced >= target {
		return nil
	}
	if err := cf.f.Sync(); err != nil {
		// After a failed fsync the kernel may have dropped the dirty pages,
		// and a retry can report success without them: never trust this
		// handle again.
		cf.syncErr = fmt.Errorf("fsync chat file: %w", err)
		cf.broken.Store(true)
		return cf.syncErr
	}
	cf.synced = target
	return nil
}
