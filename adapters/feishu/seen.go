package feishu

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/google/renameio/v2"
)

// seenMax is how many event ids are remembered. Feishu re-pushes an event
// within hours, not thousands of events later.
const seenMax = 20_000

// seenEvents remembers the ids of handled events, in memory and in a file
// under CacheDir, so that a re-pushed event changes nothing even after a
// restart. (Accepted messages are also recognised by message id through
// the ChatStore; the event id catches the rest: commands, ignored messages,
// and messages too far back in a busy chat's log.)
type seenEvents struct {
	mu    sync.Mutex
	state map[string]bool // id → true once handled, false while in flight
	order []string        // handled ids, oldest first
	path  string
	f     *os.File // nil: memory only
}

func openSeenEvents(dir string) (*seenEvents, error) {
	s := &seenEvents{state: make(map[string]bool)}
	if dir == "" {
		return s, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("feishu: creating cache folder: %w", err)
	}
	s.path = filepath.Join(dir, "events.txt")
	if err := s.load(); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(s.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("feishu: opening event log: %w", err)
	}
	s.f = f
	return s, nil
}

// load reads the file, keeps the newest seenMax ids and compacts the file
// when it holds many more. A torn last line (a crash mid-write) is ended,
// so the next id does not run into it.
func (s *seenEvents) load() error {
	data, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("feishu: reading event log: %w", err)
	}
	ids := strings.Fields(string(data))
	lines := len(ids)
	if len(ids) > seenMax {
		ids = ids[len(ids)-seenMax:]
	}
	for _, id := range ids {
		if !s.state[id] {
			s.state[id] = true
			s.order = append(s.order, id)
		}
	}
	if lines > 2*seenMax || (len(data) > 0 && data[len(data)-1] != '\n') {
		return s.rewrite()
	}
	return nil
}

// rewrite replaces the file with the remembered ids, atomically.
func (s *seenEvents) rewrite() error {
	data := strings.Join(s.order, "\n") + "\n"
	if err := renameio.WriteFile(s.path, []byte(data), 0o600); err != nil {
		return fmt.Errorf("feishu: compacting event log: %w", err)
	}
	return nil
}

// claim marks id in flight. It reports dup when id was handled already,
// and busy when another delivery of it is being handled right now.
func (s *seenEvents) claim(id string) (dup, busy bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	done, ok := s.state[id]
	if ok {
		return done, !done
	}
	s.state[id] = false
	return false, false
}

// release forgets an in-flight id whose handling failed, so that the
// platform's next delivery is handled.
func (s *seenEvents) release(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if done, ok := s.state[id]; ok && !done {
		delete(s.state, id)
	}
}

// done records id as handled. The append is not fsynced: losing the last
// ids in a power cut only means the ChatStore's message-id check decides.
func (s *seenEvents) done(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state[id] = true
	s.order = append(s.order, id)
	if len(s.order) > seenMax+seenMax/4 {
		drop := len(s.order) - seenMax
		for _, old := range s.order[:drop] {
			delete(s.state, old)
		}
		s.order = append([]string(nil), s.order[drop:]...)
	}
	if s.f == nil {
		return nil
	}
	if _, err := s.f.WriteString(id + "\n"); err != nil {
		return fmt.Errorf("feishu: recording event id: %w", err)
	}
	return nil
}

// close closes the file; later ids are remembered in memory only.
func (s *seenEvents) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}
