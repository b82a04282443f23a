package chat

import (
	"bytes"
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"
	"unicode/utf8"
)

// Durability says when Append may return relative to the entry reaching
// stable storage.
type Durability string

const (
	// DurabilityAlways fsyncs before Append returns. Concurrent appenders to
	// one chat share an fsync (group commit), so a burst pays for few of them.
	DurabilityAlways Durability = "always"
	// DurabilityNone never fsyncs: a crash may lose the newest entries. Meant
	// for tests and benchmarks.
	DurabilityNone Durability = "none"
)

const (
	defaultSegmentBytes = 32 << 20
	defaultMaxOpenFiles = 128
	readBlockSize       = 64 << 10
	// maxPooledBuffer stops one huge entry from pinning its buffer forever.
	maxPooledBuffer = 64 << 10
)

var (
	// ErrInvalidEntry is returned by Append for an entry it refuses to write:
	// an unknown role, a string field that is not valid UTF-8, or a Meta that
	// cannot be encoded as JSON.
	ErrInvalidEntry = errors.New("invalid chat log entry")
	// ErrStoreClosed is returned by every method of a Store after Close.
	ErrStoreClosed = errors.New("chat store closed")
	// ErrStoreLocked means another process (another ship) has the store
	// open: two writers would corrupt each other's segments.
	ErrStoreLocked = errors.New("chat store is in use by another ship process")
	// ErrEmptyKeyword is returned by Search for an empty keyword.
	ErrEmptyKeyword = errors.New("empty search keyword")
)

// StoreOptions configures OpenStore.
type StoreOptions struct {
	// Dir is the chats folder, e.g. <project>/.ship/chats; created if missing.
	Dir string
	// Durability defaults to DurabilityAlways.
	Durability Durability
	// SegmentBytes is the size past which the live file of a chat is archived
	// and a fresh one started; 0 means 32 MiB.
	SegmentBytes int64
	// MaxOpenFiles caps the file handles kept open for appending (LRU);
	// 0 means 128.
	MaxOpenFiles int
	// Now is the clock for entries appended without a timestamp; nil means
	// time.Now.
	Now func() time.Time
}

// Store is the append-only log of every chat: one JSONL file per chat in a
// single folder, named by EscapeChatKey, plus archived segments beside it once
// a file grows past StoreOptions.SegmentBytes.
//
// A Store is safe for concurrent use. Only one Store (in one process) may
// append to a folder at a time; readers in other processes are fine.
type Store struct {
	dir          string
	lock         *os.File // held for the store's life (lock_unix.go)
	durability   Durability
	segmentBytes int64
	maxOpen      int
	now          func() time.Time
	// blockSize is how much a reader reads at a time; tests shrink it to
	// exercise lines that straddle blocks.
	blockSize int

	bufs sync.Pool // *bytes.Buffer used to encode one line

	mu     sync.Mutex
	closed bool
	files  map[string]*chatFile // open live files by stem
	lru    *list.List           // of *chatFile, most recently used first
	// archives lists the archive seqs (ascending) of the stems that have any,
	// so readers need not list a folder that may hold 100,000 chats.
	archives map[string][]int
}

// OpenStore opens (creating if needed) the chats folder opts.Dir.
func OpenStore(opts StoreOptions) (*Store, error) {
	if opts.Dir == "" {
		return nil, errors.New("open chat store: Dir is empty")
	}
	durability := opts.Durability
	switch durability {
	case "":
		durability = DurabilityAlways
	case DurabilityAlways, DurabilityNone:
	default:
		return nil, fmt.Errorf("open chat store: unknown durability %q (want %q or %q)", durability, DurabilityAlways, DurabilityNone)
	}
	if opts.SegmentBytes < 0 || opts.MaxOpenFiles < 0 {
		return nil, errors.New("open chat store: SegmentBytes and MaxOpenFiles must not be negative")
	}
	s := &Store{
		durability:   durability,
		segmentBytes: orDefault(opts.SegmentBytes, defaultSegmentBytes),
		maxOpen:      int(orDefault(int64(opts.MaxOpenFiles), defaultMaxOpenFiles)),
		now:          opts.Now,
		blockSize:    readBlockSize,
		files:        make(map[string]*chatFile),
		lru:          list.New(),
	}
	if s.now == nil {
		s.now = time.Now
	}
	// Absolute, so a later os.Chdir in the process cannot move the store.
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("open chat store: %w", err)
	}
	s.dir = dir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open chat store: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	s.lock = lock
	names, err := readDirNames(dir)
	if err != nil {
		s.unlock()
		return nil, fmt.Errorf("open chat store: %w", err)
	}
	s.archives = make(map[string][]int)
	for _, name := range names {
		if stem, seq, ok := parseFileName(name); ok && seq > 0 {
			s.archives[stem] = append(s.archives[stem], seq)
		}
	}
	for _, seqs := range s.archives {
		slices.Sort(seqs)
	}
	return s, nil
}

// orDefault returns v, or def when v is zero.
func orDefault(v, def int64) int64 {
	if v == 0 {
		return def
	}
	return v
}

// Append writes e as one line of its chat's file and returns it as written:
// V is set to 1 and a zero TS to the current time in milliseconds. An entry
// that fails validation (ErrInvalidChatKey, ErrInvalidEntry) writes nothing.
// With DurabilityAlways the entry is on stable storage when Append returns;
// an error from the write or fsync itself means the entry may or may not be
// in the file.
func (s *Store) Append(ctx context.Context, e ChatLogEntryV1) (ChatLogEntryV1, error) {
	e, p, err := s.append(ctx, e)
	if err != nil {
		return ChatLogEntryV1{}, err
	}
	if err := p.Wait(); err != nil {
		return ChatLogEntryV1{}, fmt.Errorf("append chat entry: %w", err)
	}
	return e, nil
}

// AppendDeferred writes e like Append but returns before it is fsynced: the
// caller waits with Pending.Wait before it acknowledges the entry to anyone.
// A reply appended to the same chat meanwhile is fsynced with it, so a turn
// whose acknowledgement is its answer (the HTTP API) costs one fsync, not
// two. Wait or Release must be called once, also on paths that give up:
// until then the chat's file handle stays open.
func (s *Store) AppendDeferred(ctx context.Context, e ChatLogEntryV1) (ChatLogEntryV1, *Pending, error) {
	return s.append(ctx, e)
}

// Pending is an entry written by AppendDeferred that may not be on stable
// storage yet.
type Pending struct {
	wait func() error // set by NewPending instead of s and cf
	s    *Store
	cf   *chatFile
	seq  uint64
	once sync.Once
	err  error
}

// Release gives the handle back without waiting for durability: for an
// entry whose durability another record already guarantees (the pending
// work journal). Wait after Release returns nil at once.
func (p *Pending) Release() {
	p.once.Do(func() {
		if p.cf != nil {
			p.s.release(p.cf)
		}
	})
}

// Wait returns once the entry is on stable storage (at once with
// DurabilityNone, or when a later fsync of the chat already covered it).
// Later calls return the first result.
func (p *Pending) Wait() error {
	p.once.Do(func() {
		if p.wait != nil {
			p.err = p.wait()
			return
		}
		if p.cf == nil {
			return
		}
		if p.s.durability == DurabilityAlways {
			p.err = p.cf.waitSynced(p.seq)
		}
		p.s.release(p.cf)
	})
	return p.err
}

func (s *Store) append(ctx context.Context, e ChatLogEntryV1) (ChatLogEntryV1, *Pending, error) {
	if err := ctx.Err(); err != nil {
		return ChatLogEntryV1{}, nil, fmt.Errorf("append chat entry: %w", err)
	}
	stem, err := checkEntry(e)
	if err != nil {
		return ChatLogEntryV1{}, nil, fmt.Errorf("append chat entry: %w", err)
	}
	e.V = 1
	if e.TS == 0 {
		e.TS = s.now().UnixMilli()
	}

	buf, _ := s.bufs.Get().(*bytes.Buffer)
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	defer func() {
		if buf.Cap() <= maxPooledBuffer {
			buf.Reset()
			s.bufs.Put(buf)
		}
	}()
	if err := EncodeEntry(buf, e); err != nil {
		return ChatLogEntryV1{}, nil, fmt.Errorf("append chat entry: %w", err)
	}

	p, err := s.appendLine(stem, buf.Bytes())
	if errors.Is(err, errHandleBroken) {
		// Nothing was written, and the broken handle is gone now: a fresh
		// one may well work.
		p, err = s.appendLine(stem, buf.Bytes())
	}
	if err != nil {
		return ChatLogEntryV1{}, nil, fmt.Errorf("append chat entry: %w", err)
	}
	return e, p, nil
}

// appendLine writes line to the live file of stem. The returned Pending
// holds the file handle until its Wait.
func (s *Store) appendLine(stem string, line []byte) (*Pending, error) {
	cf, err := s.acquire(stem)
	if err != nil {
		return nil, err
	}
	seq, err := s.writeLine(cf, line)
	if err != nil {
		s.release(cf)
		return nil, err
	}
	return &Pending{s: s, cf: cf, seq: seq}, nil
}

// EncodeEntry writes e to buf as its log line: JSON, '<' and '&' kept as
// written, ending in the line's one '\n' (Encode escapes control
// characters). Every ChatStore writes entries this way, so the cluster's
// chat log exports to the very bytes of the JSONL files.
func EncodeEntry(buf *bytes.Buffer, e ChatLogEntryV1) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidEntry, err)
	}
	return nil
}

// checkEntry validates e for Append and returns the stem of its chat.
func checkEntry(e ChatLogEntryV1) (string, error) {
	stem, err := EscapeChatKey(e.ChatKey)
	if err != nil {
		return "", err
	}
	if !knownRole(e.Role) {
		return "", fmt.Errorf("%w: unknown role %q", ErrInvalidEntry, e.Role)
	}
	// The JSON encoder would silently turn bad bytes into U+FFFD; refusing
	// them keeps the log a faithful record of what was sent.
	for _, f := range [...]struct{ name, value string }{
		{"text", e.Text},
		{"channel", e.Channel},
		{"chatId", e.ChatID},
		{"userId", e.UserID},
		{"messageId", e.MessageID},
	} {
		if !utf8.ValidString(f.value) {
			return "", fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalidEntry, f.name)
		}
	}
	return stem, nil
}

func knownRole(role string) bool {
	switch role {
	case RoleUser, RoleAssistant, RoleSystem, RoleTool, RoleSummary:
		return true
	}
	return false
}

// ChatKeys returns every chat that has a live file or an archive, sorted.
func (s *Store) ChatKeys(ctx context.Context) ([]string, error) {
	if err := s.checkOpen(ctx); err != nil {
		return nil, fmt.Errorf("list chats: %w", err)
	}
	names, err := readDirNames(s.dir)
	if err != nil {
		return nil, fmt.Errorf("list chats: %w", err)
	}
	seen := make(map[string]struct{})
	keys := []string{}
	for _, name := range names {
		stem, _, ok := parseFileName(name)
		if !ok {
			continue
		}
		key, err := UnescapeChatKey(stem)
		if err != nil {
			continue
		}
		if _, dup := seen[key]; !dup {
			seen[key] = struct{}{}
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	return keys, nil
}

// Close closes the open files. Appends still in flight finish; every later
// call returns ErrStoreClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrStoreClosed
	}
	s.closed = true
	var errs []error
	for _, cf := range s.files {
		if err := s.dropLocked(cf); err != nil {
			errs = append(errs, err)
		}
	}
	s.unlock()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close chat store: %w", err)
	}
	return nil
}

// checkOpen fails once the store is closed or ctx is done.
func (s *Store) checkOpen(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrStoreClosed
	}
	return nil
}

// archiveSeqs returns the archive seqs of stem, ascending. Archives appear
// only by rolling, one seq past the highest, so a Stat of the next seq is
// enough to notice ones made since the index was built (by an earlier
// store over the same folder, for instance).
func (s *Store) archiveSeqs(stem string) []int {
	s.mu.Lock()
	seqs := slices.Clone(s.archives[stem])
	s.mu.Unlock()
	next := 1
	if len(seqs) > 0 {
		next = seqs[len(seqs)-1] + 1
	}
	for {
		if _, err := os.Lstat(filepath.Join(s.dir, archiveFileName(stem, next))); err != nil {
			break
		}
		s.addArchive(stem, next)
		seqs = append(seqs, next)
		next++
	}
	return seqs
}

// addArchive records archive seq of stem in the index.
func (s *Store) addArchive(stem string, seq int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seqs := s.archives[stem]
	if i, found := slices.BinarySearch(seqs, seq); !found {
		s.archives[stem] = slices.Insert(seqs, i, seq)
	}
}

// readDirNames lists dir without sorting or stat-ing its entries, which is
// what matters when it holds many chats.
func readDirNames(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}

// syncDir fsyncs dir so that a file just created or renamed in it survives a
// crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync chats folder: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync chats folder: %w", err)
	}
	return nil
}

// lockFileName is the lock file in the chats folder; it can never be mistaken
// for a chat (escaped stems never contain '.').
const lockFileName = ".lock"

// unlock releases the folder lock; closing the file drops the flock.
func (s *Store) unlock() {
	if s.lock != nil {
		_ = s.lock.Close()
		s.lock = nil
	}
}
