package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// Recent returns the newest n entries of a chat in time order (oldest first).
// It reads the live file backwards block by block and continues into the
// archives, newest first, only when the live file holds fewer than n, so its
// cost depends on n and not on the size of the history. A chat with no file
// yields no entries and no error; so does n <= 0.
func (s *Store) Recent(ctx context.Context, chatKey string, n int) ([]ChatLogEntryV1, error) {
	stem, err := s.readable(ctx, chatKey)
	if err != nil {
		return nil, fmt.Errorf("read recent chat entries: %w", err)
	}
	out := make([]ChatLogEntryV1, 0, min(max(n, 0), 256))
	if n <= 0 {
		return out, nil
	}
	err = s.walkBackward(ctx, stem, func(line []byte) bool {
		if e, ok := DecodeEntry(line); ok {
			out = append(out, e)
		}
		return len(out) < n
	})
	if err != nil {
		return nil, fmt.Errorf("read recent chat entries: %w", err)
	}
	slices.Reverse(out)
	return out, nil
}

// Search returns up to limit entries of a chat whose Text contains keyword,
// ignoring case, newest first. It covers the live file and then the archives
// from newest to oldest. An empty keyword fails with ErrEmptyKeyword;
// limit <= 0 yields no entries.
func (s *Store) Search(ctx context.Context, chatKey, keyword string, limit int) ([]ChatLogEntryV1, error) {
	stem, err := s.readable(ctx, chatKey)
	if err != nil {
		return nil, fmt.Errorf("search chat: %w", err)
	}
	if keyword == "" {
		return nil, fmt.Errorf("search chat: %w", ErrEmptyKeyword)
	}
	out := []ChatLogEntryV1{}
	if limit <= 0 {
		return out, nil
	}
	m := NewMatcher(keyword)
	err = s.walkBackward(ctx, stem, func(line []byte) bool {
		if !m.MatchesLine(line) {
			return true
		}
		if e, ok := DecodeEntry(line); ok {
			out = append(out, e)
		}
		return len(out) < limit
	})
	if err != nil {
		return nil, fmt.Errorf("search chat: %w", err)
	}
	return out, nil
}

// Scan calls fn with every entry of a chat, oldest first (archives, then the
// live file), until fn returns false. Entries appended while Scan runs may
// or may not be seen.
func (s *Store) Scan(ctx context.Context, chatKey string, fn func(ChatLogEntryV1) bool) error {
	stem, err := s.readable(ctx, chatKey)
	if err != nil {
		return fmt.Errorf("scan chat: %w", err)
	}
	err = s.walkForward(ctx, stem, func(line []byte) bool {
		if e, ok := DecodeEntry(line); ok {
			return fn(e)
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("scan chat: %w", err)
	}
	return nil
}

// readable checks that the store is open and returns the stem of chatKey.
func (s *Store) readable(ctx context.Context, chatKey string) (string, error) {
	if err := s.checkOpen(ctx); err != nil {
		return "", err
	}
	return EscapeChatKey(chatKey)
}

// DecodeEntry decodes one line of a chat log (a JSONL line, or a message
// of the cluster's chat log). Anything that is not an entry Append could
// have written (a torn line, garbage, another version) is skipped (false).
func DecodeEntry(line []byte) (ChatLogEntryV1, bool) {
	var e ChatLogEntryV1
	if err := json.Unmarshal(line, &e); err != nil || e.V != 1 || !knownRole(e.Role) {
		return ChatLogEntryV1{}, false
	}
	return e, true
}

// segment is one open file of a chat, read up to its size when opened.
type segment struct {
	f    *os.File
	info os.FileInfo
}

// openSegment opens path for reading; a missing file is (nil, nil).
func openSegment(path string) (*segment, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open chat file: %w", err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open chat file: %w", err)
	}
	return &segment{f: f, info: info}, nil
}

// walkBackward calls fn with each line of a chat, newest first, until fn
// returns false.
func (s *Store) walkBackward(ctx context.Context, stem string, fn func([]byte) bool) error {
	live, err := openSegment(filepath.Join(s.dir, liveFileName(stem)))
	if err != nil {
		return err
	}
	if live != nil {
		more, err := s.readBackward(ctx, live, fn)
		live.f.Close()
		if err != nil || !more {
			return err
		}
	}
	seqs := s.olderArchives(stem, live)
	for i := len(seqs) - 1; i >= 0; i-- {
		seg, err := openSegment(filepath.Join(s.dir, archiveFileName(stem, seqs[i])))
		if err != nil {
			return err
		}
		if seg == nil {
			continue // deleted by hand since it was indexed
		}
		more, err := s.readBackward(ctx, seg, fn)
		seg.f.Close()
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// olderArchives returns, ascending, the archive seqs of stem that hold
// entries older than those of live, the live file as opened earlier (nil if
// there was none).
//
// Opening the live file before listing archives means a roll in between
// cannot make its entries vanish from view; it only turns the file already
// opened into an archive, with possibly newer ones after it. Those are left
// out so that readers see one consistent, ordered history.
func (s *Store) olderArchives(stem string, live *segment) []int {
	seqs := s.archiveSeqs(stem)
	if live == nil {
		return seqs
	}
	cur, err := os.Stat(filepath.Join(s.dir, liveFileName(stem)))
	if err == nil && os.SameFile(cur, live.info) {
		return seqs // not rolled, so every archive listed predates it
	}
	for i := len(seqs) - 1; i >= 0; i-- {
		fi, err := os.Stat(filepath.Join(s.dir, archiveFileName(stem, seqs[i])))
		if err == nil && os.SameFile(fi, live.info) {
			return seqs[:i]
		}
	}
	return seqs
}

// readBackward feeds fn the lines of seg from last to first and reports
// whether fn wants more.
func (s *Store) readBackward(ctx context.Context, seg *segment, fn func([]byte) bool) (bool, error) {
	lines := newBackwardLines(seg.f, seg.info.Size(), s.blockSize)
	for {
		line, err := lines.prev(ctx)
		if errors.Is(err, io.EOF) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		if !fn(line) {
			return false, nil
		}
	}
}

// walkForward calls fn with each line of a chat, oldest first, until fn
// returns false. As in walkBackward, the live file is opened first.
func (s *Store) walkForward(ctx context.Context, stem string, fn func([]byte) bool) error {
	live, err := openSegment(filepath.Join(s.dir, liveFileName(stem)))
	if err != nil {
		return err
	}
	if live != nil {
		defer live.f.Close()
	}
	for _, seq := range s.olderArchives(stem, live) {
		seg, err := openSegment(filepath.Join(s.dir, archiveFileName(stem, seq)))
		if err != nil {
			return err
		}
		if seg == nil {
			continue
		}
		more, err := s.readForward(ctx, seg.f, seg.info.Size(), fn)
		seg.f.Close()
		if err != nil || !more {
			return err
		}
	}
	if live == nil {
		return nil
	}
	// Stat again so that entries appended while the archives were read are
	// included.
	info, err := live.f.Stat()
	if err != nil {
		return fmt.Errorf("read chat file: %w", err)
	}
	_, err = s.readForward(ctx, live.f, info.Size(), fn)
	return err
}

// readForward feeds fn the lines of the first size bytes of f and reports
// whether fn wants more.
func (s *Store) readForward(ctx context.Context, f *os.File, size int64, fn func([]byte) bool) (bool, error) {
	lines := newForwardLines(ctx, io.NewSectionReader(f, 0, size), s.blockSize)
	for {
		line, err := lines.next()
		if errors.Is(err, io.EOF) {
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("read chat file: %w", err)
		}
		if !fn(line) {
			return false, nil
		}
	}
}
