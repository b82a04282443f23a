package journal_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/journal"
	"github.com/shipmyagent/ship/runtime/turn"
)

func item(id string) journal.Item {
	return journal.Item{Turn: turn.Turn{ID: id, ChatKey: "api:chat:" + id, Text: "text " + id, Route: dispatch.RequestContext{Channel: "api", ChatID: id, ChatKey: "api:chat:" + id}}}
}

// What a crash leaves behind comes back at the next open: unfinished items,
// oldest first, with how often they started and whether a reply was on its
// way; finished ones are gone.
func TestReopenReturnsWhatNeverFinished(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pending.jsonl")
	j, items, err := journal.Open(path, true)
	if err != nil || len(items) != 0 {
		t.Fatalf("new journal: %v, %d items", err, len(items))
	}
	for _, id := range []string{"a", "b", "c"} {
		if err := j.Add(item(id)); err != nil {
			t.Fatal(err)
		}
	}
	steps := []error{j.Start("a"), j.Done("a"), j.Start("b"), j.Sending("b"), j.Start("c"), j.Start("c")}
	for _, err := range steps {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := j.Pending(); n != 2 {
		t.Errorf("pending = %d, want 2", n)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	j, items, err = journal.Open(path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if len(items) != 2 || items[0].ID != "b" || items[1].ID != "c" {
		t.Fatalf("reopened items = %+v, want b then c", items)
	}
	if items[0].Sends != 1 || items[0].Attempts != 1 || items[1].Attempts != 2 || items[1].Sends != 0 {
		t.Errorf("counts = %+v", items)
	}
	if items[0].Route.ChatKey != "api:chat:b" || items[0].Text != "text b" {
		t.Errorf("item b came back as %+v", items[0])
	}
}

// A crash mid-write tears the last line: it is skipped, and what follows
// is written on a line of its own.
func TestTornLastLineIsSkipped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pending.jsonl")
	j, _, err := journal.Open(path, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Add(item("a")); err != nil {
		t.Fatal(err)
	}
	j.Close()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"op":"add","id":"torn","item":{"id":"to`)
	f.Close()

	j, items, err := journal.Open(path, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 1 || items[0].ID != "a" {
		t.Fatalf("items = %+v, want only a", items)
	}
	if err := j.Add(item("b")); err != nil {
		t.Fatal(err)
	}
	j.Close()
	_, items, err = journal.Open(path, false)
	if err != nil || len(items) != 2 {
		t.Fatalf("after torn line and a new add: %+v, %v", items, err)
	}
}

// Recovery runs a chat's messages again in the order they were accepted,
// also when many were accepted within one millisecond.
func TestReopenKeepsTheOrderOfAcceptance(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pending.jsonl")
	j, _, err := journal.Open(path, false)
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	for i := range n {
		if err := j.Add(item(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	_, items, err := journal.Open(path, false)
	if err != nil || len(items) != n {
		t.Fatalf("%d items, %v", len(items), err)
	}
	for i, it := range items {
		if it.ID != fmt.Sprint(i) {
			t.Fatalf("item %d is %s: recovery would run messages out of order", i, it.ID)
		}
	}
}

// A reply being written when ship stopped comes back with the messages it
// showed, twice over a reopen (compaction keeps them); a send intent
// finishes it, so a later reply's messages are the only ones left.
func TestStreamedMessagesSurviveUntilTheReplyIsSent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pending.jsonl")
	j, _, err := journal.Open(path, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{j.Add(item("a")), j.Add(item("b")), j.Start("a"), j.Streaming("a", []string{"7"}),
		j.Streaming("a", []string{"7", "8"}), j.Start("b"), j.Streaming("b", []string{"3"}), j.Sending("b"),
		j.Streaming("b", []string{"4"})} {
		if err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	for range 2 {
		j, items, err := journal.Open(path, true)
		if err != nil || len(items) != 2 {
			t.Fatalf("reopen: %v, %d items", err, len(items))
		}
		if a := items[0]; fmt.Sprint(a.Streamed) != "[7 8]" || a.Sends != 0 {
			t.Errorf("a: streamed %v, sends %d; want [7 8], 0 (to be taken over)", a.Streamed, a.Sends)
		}
		if b := items[1]; fmt.Sprint(b.Streamed) != "[4]" || b.Sends != 1 {
			t.Errorf("b: streamed %v, sends %d; want [4] (a later reply, unfinished), 1", b.Streamed, b.Sends)
		}
		j.Close()
	}
}
