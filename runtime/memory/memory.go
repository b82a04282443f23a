// Package memory keeps ship's long-term notes: Markdown a chat keeps about
// itself and notes about one person, which the agent reads and writes with
// the memory_* tools and which are put into the system prompt of later
// turns. Alone, ship keeps them as plain files under .ship/memory/ that
// people may edit by hand (chats/<escaped chatKey>.md and
// people/<escaped identity>.md); in cluster mode they are records of a
// shared table, so every replica sees the same notes.
//
// Every read goes to the file (or the table): an edit made by hand or in
// the console shows up in the very next turn, with no cache to go stale.
package memory

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/records"
	"github.com/shipmyagent/ship/runtime/statefile"
)

// Kind says whose notes: a chat's or a person's.
type Kind string

// The kinds of notes.
const (
	// KindChat are a chat's notes, keyed by its chatKey; they are shown
	// only in that chat.
	KindChat Kind = "chat"
	// KindPerson are notes about one person, keyed by their identity
	// ("telegram:42"); where they are shown is Options.PersonNotesIn.
	KindPerson Kind = "person"
)

// Where a person's notes are shown (memory.personNotesIn).
const (
	PersonPrivate = "private"
	PersonAll     = "all"
	PersonNone    = "none"
)

// Defaults of Options.
const (
	DefaultMaxBytes    = 16 << 10
	DefaultPromptBytes = 4 << 10
)

// Errors callers branch on.
var (
	// ErrTooLarge refuses a write past Options.MaxBytes.
	ErrTooLarge = errors.New("notes too large")
	// ErrInvalid refuses a bad key or text (not UTF-8, NUL bytes).
	ErrInvalid = errors.New("invalid notes")
)

// Ref names one set of notes.
type Ref struct {
	Kind Kind   `json:"kind"`
	ID   string `json:"id"`
}

// String is how logs and the console name r ("chat telegram:chat:42").
func (r Ref) String() string { return string(r.Kind) + " " + r.ID }

// Note is one set of notes and its text.
type Note struct {
	Ref
	Text string `json:"text"`
}

// Options configure a Store.
type Options struct {
	// Dir is the folder of the files (<project>/.ship/memory); unused
	// with Table.
	Dir string
	// Table, when set, keeps the notes there instead of files (cluster
	// mode), one record per Ref keyed "chat/<chatKey>" or
	// "person/<identity>".
	Table records.Table
	// PersonNotesIn is where a person's notes are shown and written:
	// PersonPrivate (default: chats that are not groups), PersonAll, or
	// PersonNone.
	PersonNotesIn string
	// MaxBytes bounds one set of notes (0 → 16 KiB).
	MaxBytes int
	// PromptBytes bounds what of one set of notes goes into a prompt
	// (0 → 4 KiB).
	PromptBytes int
}

// Store reads and writes notes. Safe for concurrent use.
type Store struct {
	opts Options
	// mu makes a file's read-modify-write (Append) whole within this
	// process; a table uses compare-and-swap instead.
	mu sync.Mutex
}

// Open returns a Store; it refuses options that make no sense.
func Open(opts Options) (*Store, error) {
	if opts.PersonNotesIn == "" {
		opts.PersonNotesIn = PersonPrivate
	}
	switch opts.PersonNotesIn {
	case PersonPrivate, PersonAll, PersonNone:
	default:
		return nil, fmt.Errorf("opening notes: personNotesIn %q must be private, all or none", opts.PersonNotesIn)
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.PromptBytes <= 0 {
		opts.PromptBytes = DefaultPromptBytes
	}
	if opts.Table == nil && opts.Dir == "" {
		return nil, errors.New("opening notes: no folder and no table")
	}
	return &Store{opts: opts}, nil
}

// MaxBytes is the bound on one set of notes.
func (s *Store) MaxBytes() int { return s.opts.MaxBytes }

// Shared reports whether the notes live in a shared table (cluster mode)
// rather than files.
func (s *Store) Shared() bool { return s.opts.Table != nil }

// Read returns r's notes; "" when there are none.
func (s *Store) Read(ctx context.Context, r Ref) (string, error) {
	if err := r.check(); err != nil {
		return "", err
	}
	if s.opts.Table != nil {
		rec, err := s.opts.Table.Get(ctx, r.key())
		if errors.Is(err, records.ErrNotFound) {
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("reading %s notes: %w", r.Kind, err)
		}
		return string(rec.Value), nil
	}
	path, err := s.path(r)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading %s notes: %w", r.Kind, err)
	}
	return string(b), nil
}

// Write replaces r's notes with text; an empty (or all-space) text
// removes them. Text past MaxBytes is refused with ErrTooLarge and
// nothing changes.
func (s *Store) Write(ctx context.Context, r Ref, text string) error {
	return s.change(ctx, r, func(string) (string, error) { return text, nil })
}

// Append adds text to r's notes on a line of its own.
func (s *Store) Append(ctx context.Context, r Ref, text string) error {
	return s.change(ctx, r, func(old string) (string, error) {
		if strings.TrimSpace(old) == "" {
			return text, nil
		}
		return strings.TrimRight(old, "\n") + "\n" + text, nil
	})
}

// change writes what edit makes of r's notes.
func (s *Store) change(ctx context.Context, r Ref, edit func(old string) (string, error)) error {
	if err := r.check(); err != nil {
		return err
	}
	final := func(old string) (string, error) {
		text, err := edit(old)
		if err != nil {
			return "", err
		}
		if err := s.checkText(text); err != nil {
			return "", err
		}
		if strings.TrimSpace(text) == "" {
			return "", nil
		}
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		return text, nil
	}
	if s.opts.Table != nil {
		err := records.Update(ctx, s.opts.Table, r.key(), func(old []byte, _ bool) ([]byte, bool, error) {
			text, err := final(string(old))
			return []byte(text), text == "", err
		})
		if err != nil {
			return fmt.Errorf("saving %s notes: %w", r.Kind, err)
		}
		return nil
	}
	path, err := s.path(r)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, err := s.Read(ctx, r)
	if err != nil {
		return err
	}
	text, err := final(old)
	if err != nil {
		return err
	}
	if text == "" {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing %s notes: %w", r.Kind, err)
		}
		return nil
	}
	if err := statefile.Write(path, []byte(text)); err != nil {
		return fmt.Errorf("saving %s notes: %w", r.Kind, err)
	}
	return nil
}

// checkText refuses text a notes file must not hold.
func (s *Store) checkText(text string) error {
	switch {
	case !utf8.ValidString(text):
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalid)
	case strings.ContainsRune(text, 0):
		return fmt.Errorf("%w: contains a NUL byte", ErrInvalid)
	case len(text) > s.opts.MaxBytes:
		return fmt.Errorf("%w: they would be %d bytes and the limit is %d: keep what matters, shorter (replace them with a condensed version)",
			ErrTooLarge, len(text), s.opts.MaxBytes)
	}
	return nil
}

// List returns every set of notes there is, chats first, each sorted by
// key.
func (s *Store) List(ctx context.Context) ([]Note, error) {
	var out []Note
	if s.opts.Table != nil {
		recs, err := s.opts.Table.List(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing notes: %w", err)
		}
		for _, rec := range recs {
			kind, id, ok := strings.Cut(rec.Key, "/")
			if r := (Ref{Kind(kind), id}); ok && r.check() == nil {
				out = append(out, Note{Ref: r, Text: string(rec.Value)})
			}
		}
	} else {
		for _, kind := range []Kind{KindChat, KindPerson} {
			notes, err := s.listDir(ctx, kind)
			if err != nil {
				return nil, err
			}
			out = append(out, notes...)
		}
	}
	slices.SortFunc(out, func(a, b Note) int {
		if a.Kind != b.Kind {
			return strings.Compare(string(a.Kind), string(b.Kind))
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// listDir reads the notes files of one kind; files ship would not have
// named are skipped.
func (s *Store) listDir(ctx context.Context, kind Kind) ([]Note, error) {
	dir := filepath.Join(s.opts.Dir, kind.folder())
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing notes: %w", err)
	}
	var out []Note
	for _, e := range ents {
		stem, ok := strings.CutSuffix(e.Name(), ".md")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		id, err := chat.UnescapeChatKey(stem)
		if err != nil {
			continue
		}
		r := Ref{kind, id}
		text, err := s.Read(ctx, r)
		if err != nil {
			return nil, err
		}
		out = append(out, Note{Ref: r, Text: text})
	}
	return out, nil
}

// path is r's file.
func (s *Store) path(r Ref) (string, error) {
	stem, err := chat.EscapeChatKey(r.ID)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return filepath.Join(s.opts.Dir, r.Kind.folder(), stem+".md"), nil
}

// folder is where notes of kind k are kept, under Options.Dir.
func (k Kind) folder() string {
	if k == KindPerson {
		return "people"
	}
	return "chats"
}

// key is r's record key in a table.
func (r Ref) key() string { return string(r.Kind) + "/" + r.ID }

// check refuses a Ref that names no notes.
func (r Ref) check() error {
	if r.Kind != KindChat && r.Kind != KindPerson {
		return fmt.Errorf("%w: kind %q is neither chat nor person", ErrInvalid, r.Kind)
	}
	if _, err := chat.EscapeChatKey(r.ID); err != nil {
		return fmt.Errorf("%w: %s key: %w", ErrInvalid, r.Kind, err)
	}
	return nil
}
