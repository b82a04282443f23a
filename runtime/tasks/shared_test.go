package tasks_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/internal/fakeclock"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/records"
	"github.com/shipmyagent/ship/runtime/tasks"
)

type countingSubmitter struct {
	mu  sync.Mutex
	ids []string
}

func (c *countingSubmitter) Submit(_ context.Context, s ingress.Submission) (ingress.Ticket, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ids = append(c.ids, s.ID)
	return ingress.Ticket{}, nil
}

func (c *countingSubmitter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ids)
}

type emptyHistory struct{}

func (emptyHistory) Recent(context.Context, string, int) ([]chat.ChatLogEntryV1, error) {
	return nil, nil
}
func (emptyHistory) Scan(context.Context, string, func(chat.ChatLogEntryV1) bool) error { return nil }

type noDispatchers struct{}

func (noDispatchers) Lookup(string) (dispatch.Dispatcher, bool) { return nil, false }

// sharedScheduler is a scheduler of one every-minute task of an API chat,
// keeping its bookkeeping in table, at clock.
func sharedScheduler(t *testing.T, table records.Table, clock *fakeclock.Clock, sub tasks.Submitter) (*tasks.Scheduler, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "report.md")
	if err := os.WriteFile(path, []byte("---\ncron: \"* * * * *\"\ntimezone: UTC\nchatKey: api:chat:reports\n---\nReport.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := clock.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	s, err := tasks.New(tasks.Options{Dir: dir, Submitter: sub, History: emptyHistory{}, Dispatchers: noDispatchers{},
		Clock: clock, Records: table, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	return s, dir
}

// In cluster mode the task folder keeps no state.json, and a record
// written by a newer version keeps the fields this one does not know.
func TestSharedRecordsKeepWhatANewerVersionWrote(t *testing.T) {
	ctx := context.Background()
	table := records.NewMemory()
	clock := fakeclock.New(time.Date(2026, 3, 2, 9, 0, 30, 0, time.UTC))
	newer := `{"v":2,"lastSlot":"2026-03-02T08:59:00Z","lastStatus":"ok","owner":"r7"}`
	if _, err := table.Put(ctx, "report", []byte(newer), 0); err != nil {
		t.Fatal(err)
	}
	sub := &countingSubmitter{}
	s, dir := sharedScheduler(t, table, clock, sub)
	s.Tick(ctx)
	if sub.count() != 1 {
		t.Fatalf("%d runs queued at a new slot, want 1", sub.count())
	}
	r, err := table.Get(ctx, "report")
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(r.Value, &got); err != nil {
		t.Fatal(err)
	}
	if got["owner"] != "r7" || got["lastSlot"] != "2026-03-02T09:00:00Z" || got["lastStatus"] != tasks.StatusStarted {
		t.Errorf("record after taking the 9:00 slot: %s", r.Value)
	}
	if _, err := os.Stat(filepath.Join(dir, tasks.StateFile)); !os.IsNotExist(err) {
		t.Errorf("state.json written in cluster mode: %v", err)
	}
}

// A record that cannot be read is not taken for a free slot: the task
// does not run rather than risk running a slot twice.
func TestADamagedSharedRecordRunsNothing(t *testing.T) {
	ctx := context.Background()
	table := records.NewMemory()
	if _, err := table.Put(ctx, "report", []byte("{torn"), 0); err != nil {
		t.Fatal(err)
	}
	sub := &countingSubmitter{}
	s, _ := sharedScheduler(t, table, fakeclock.New(time.Date(2026, 3, 2, 9, 0, 30, 0, time.UTC)), sub)
	s.Tick(ctx)
	if sub.count() != 0 {
		t.Errorf("%d runs queued over a damaged record, want none", sub.count())
	}
}
