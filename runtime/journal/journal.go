// Package journal is the durable record of accepted work that makes ship
// crash-safe: every accepted message until its run is done, and an fsynced
// send intent before every reply.
package journal

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/renameio/v2"

	"github.com/shipmyagent/ship/runtime/turn"
)

// Journal is the durable record of accepted work. An accepted message is
// added (and fsynced) before its platform is acknowledged; its run is
// marked started and done; and before any reply goes out a send intent is
// fsynced. After a crash, Open hands back what never finished, and
// the engine decides per item: run it again, leave it (it may have
// replied already: a reply is never sent twice), or mark it failed after
// repeated crashes.
type Journal struct {
	path    string
	durable bool

	mu      sync.Mutex // guards f, size, pending
	f       *os.File
	size    int64
	pending map[string]*Item
	seq     uint64 // the last Item.seq handed out

	written atomic.Uint64
	syncMu  sync.Mutex
	synced  uint64
}

// Item is one accepted message that has not finished: its turn, and how
// far its runs got.
type Item struct {
	turn.Turn
	Accepted int64 `json:"accepted"` // ms
	// Attempts counts runs started; Sends counts replies attempted.
	Attempts int `json:"attempts,omitempty"`
	Sends    int `json:"sends,omitempty"`
	// Streamed holds the ids of the messages of a reply that was being
	// shown while written and not yet finished (no send intent since):
	// a resumed run takes them over, and a run that is not resumed has
	// them removed, so no truncated reply stays in the chat.
	Streamed []string `json:"streamed,omitempty"`

	// seq is the item's place in the file: recovery must keep a chat's
	// messages in the order they were accepted, even within one
	// millisecond.
	seq uint64
}

// Errors a Recorder returns when the run is no longer this process's to
// make (cluster mode; the file Journal never returns them). A run told
// either must send nothing more and leave the item alone: Done then only
// forgets it here.
var (
	// ErrFenced means another replica holds the item's partition now
	// (this one's lease lapsed, say while it was paused) and runs it.
	ErrFenced = errors.New("another replica runs this message now")
	// ErrInDoubt means that, before this run began, a replica that held
	// the item earlier recorded a send intent: its reply may have gone
	// out, and answering again could answer twice.
	ErrInDoubt = errors.New("a reply to this message may have gone out from another replica")
)

// NotOurs says err means the run is not this process's to make or to end
// (ErrFenced or ErrInDoubt): it sends nothing and reports no outcome.
func NotOurs(err error) bool {
	return errors.Is(err, ErrFenced) || errors.Is(err, ErrInDoubt)
}

// Recorder is what a run keeps up to date while it goes: the file Journal,
// or in cluster mode the run state the replicas share in JetStream.
type Recorder interface {
	// Start records that a run began. ErrFenced or ErrInDoubt: do not run.
	Start(id string) error
	// Sending records, durably, that a reply is about to go out; an error
	// (ErrFenced among them) means the reply must not go.
	Sending(id string) error
	// Streaming records the messages a reply being written shows so far.
	Streaming(id string, visible []string) error
	// Done records that the item finished, however it ended.
	Done(id string) error
}

var _ Recorder = (*Journal)(nil)

type journalRecord struct {
	Op   string `json:"op"` // add | start | stream | send | done
	ID   string `json:"id"`
	Item *Item  `json:"item,omitempty"`
	// Visible is a stream record's message ids.
	Visible []string `json:"visible,omitempty"`
}

// journalCompactBytes is the size past which the file is rewritten with
// only the unfinished items.
const journalCompactBytes = 8 << 20

// Open reads the journal at path (creating it), compacts it to the
// unfinished items and returns them oldest first. A torn last line (a crash
// mid-write) is skipped.
func Open(path string, durable bool) (*Journal, []Item, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, nil, fmt.Errorf("opening journal: %w", err)
	}
	j := &Journal{path: path, durable: durable, pending: map[string]*Item{}}
	if err := j.load(); err != nil {
		return nil, nil, err
	}
	if err := j.rewrite(); err != nil {
		return nil, nil, err
	}
	items := make([]Item, 0, len(j.pending))
	for _, it := range j.inOrder() {
		items = append(items, *it)
	}
	return j, items, nil
}

func (j *Journal) load() error {
	f, err := os.Open(j.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading journal: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var r journalRecord
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.ID == "" {
			continue // torn or foreign line
		}
		j.apply(r)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading journal: %w", err)
	}
	return nil
}

func (j *Journal) apply(r journalRecord) {
	switch r.Op {
	case "add":
		if r.Item != nil {
			it := *r.Item
			j.seq++
			it.seq = j.seq
			j.pending[r.ID] = &it
		}
	case "start":
		if it := j.pending[r.ID]; it != nil {
			it.Attempts++
		}
	case "stream":
		if it := j.pending[r.ID]; it != nil {
			it.Streamed = r.Visible
		}
	case "send":
		if it := j.pending[r.ID]; it != nil {
			it.Sends++
			it.Streamed = nil // the send finishes the streamed reply
		}
	case "done":
		delete(j.pending, r.ID)
	}
}

// rewrite replaces the file with one add record per unfinished item,
// atomically (renameio: write, fsync, rename), and reopens it for appending.
func (j *Journal) rewrite() error {
	pf, err := renameio.NewPendingFile(j.path, renameio.WithPermissions(0o600))
	if err != nil {
		return fmt.Errorf("compacting journal: %w", err)
	}
	defer pf.Cleanup() // after a successful replace it does nothing
	w := bufio.NewWriter(pf)
	var size int64
	for _, it := range j.inOrder() {
		b, _ := json.Marshal(journalRecord{Op: "add", ID: it.ID, Item: it})
		n, _ := w.Write(append(b, '\n'))
		size += int64(n)
	}
	err = w.Flush()
	if err == nil {
		err = pf.CloseAtomicallyReplace()
	}
	if err == nil {
		// The rename itself must survive a power cut too.
		err = syncDir(filepath.Dir(j.path))
	}
	if err != nil {
		return fmt.Errorf("compacting journal: %w", err)
	}
	if j.f != nil {
		j.f.Close()
	}
	j.f, err = os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening journal: %w", err)
	}
	j.size = size
	return nil
}

// inOrder returns the unfinished items in the order they were added.
func (j *Journal) inOrder() []*Item {
	items := make([]*Item, 0, len(j.pending))
	for _, it := range j.pending {
		items = append(items, it)
	}
	sort.Slice(items, func(a, b int) bool { return items[a].seq < items[b].seq })
	return items
}

// Add records an accepted message; it is durable when Add returns.
func (j *Journal) Add(it Item) error {
	it.Accepted = time.Now().UnixMilli()
	return j.write(journalRecord{Op: "add", ID: it.ID, Item: &it}, true)
}

// Start records that a run began (flushed with the next durable record).
func (j *Journal) Start(id string) error { return j.write(journalRecord{Op: "start", ID: id}, false) }

// Sending records, durably, that a reply is about to go out.
func (j *Journal) Sending(id string) error { return j.write(journalRecord{Op: "send", ID: id}, true) }

// Streaming records, durably, the messages a reply being written shows in
// the chat so far (see Item.Streamed).
func (j *Journal) Streaming(id string, visible []string) error {
	return j.write(journalRecord{Op: "stream", ID: id, Visible: visible}, true)
}

// Done records that an item finished, however it ended.
func (j *Journal) Done(id string) error { return j.write(journalRecord{Op: "done", ID: id}, false) }

// Pending is how many items have not finished.
func (j *Journal) Pending() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.pending)
}

func (j *Journal) write(r journalRecord, sync bool) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("writing journal: %w", err)
	}
	j.mu.Lock()
	if j.f == nil {
		j.mu.Unlock()
		return errors.New("writing journal: closed")
	}
	n, err := j.f.Write(append(b, '\n'))
	j.size += int64(n)
	if err == nil {
		j.apply(r)
		if r.Op == "done" && j.size > journalCompactBytes {
			err = j.rewrite()
		}
	}
	seq := j.written.Add(1)
	j.mu.Unlock()
	if err != nil {
		return fmt.Errorf("writing journal: %w", err)
	}
	if sync && j.durable {
		return j.syncTo(seq)
	}
	return nil
}

// syncTo returns once an fsync that began after write seq has finished;
// concurrent writers share one fsync.
func (j *Journal) syncTo(seq uint64) error {
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	if j.synced >= seq {
		return nil
	}
	target := j.written.Load()
	j.mu.Lock()
	f := j.f
	j.mu.Unlock()
	if f == nil {
		return errors.New("syncing journal: closed")
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("syncing journal: %w", err)
	}
	j.synced = target
	return nil
}

// Close closes the file; unfinished items stay for the next start.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
