package cluster

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/shipmyagent/ship/runtime/records"
)

// A record written on one replica is read on another at once, and two
// replicas updating one record at the same time both count: the revision
// check makes the slower one read again instead of overwriting.
func TestSharedRecordsAreOneStateAcrossReplicas(t *testing.T) {
	a := startNode(t, "a", nil)
	b := startNode(t, "b", a)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ta, tb := a.Table("test"), b.Table("test")

	if _, err := tb.Get(ctx, "chat:1"); !errors.Is(err, records.ErrNotFound) {
		t.Fatalf("a record never written: %v", err)
	}
	rev, err := ta.Put(ctx, "chat:1", []byte("one"), 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tb.Get(ctx, "chat:1")
	if err != nil || string(got.Value) != "one" || got.Rev != rev {
		t.Fatalf("the other replica read %q rev %d (%v), want %q rev %d", got.Value, got.Rev, err, "one", rev)
	}
	if _, err := tb.Put(ctx, "chat:1", []byte("again"), 0); !errors.Is(err, records.ErrConflict) {
		t.Fatalf("creating a record another replica created: %v", err)
	}

	var wg sync.WaitGroup
	for _, tab := range []records.Table{ta, tb} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				err := records.Update(ctx, tab, "counter", func(old []byte, _ bool) ([]byte, bool, error) {
					n, _ := strconv.Atoi(string(old))
					return []byte(strconv.Itoa(n + 1)), false, nil
				})
				if err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	c, err := ta.Get(ctx, "counter")
	if err != nil || string(c.Value) != "20" {
		t.Fatalf("20 increments from two replicas counted as %q (%v)", c.Value, err)
	}

	list, err := tb.List(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("listing: %d records (%v), want 2", len(list), err)
	}
	if err := ta.Delete(ctx, "chat:1", rev+1000); !errors.Is(err, records.ErrConflict) {
		t.Fatalf("deleting at a revision the record is not at: %v", err)
	}
	if err := ta.Delete(ctx, "chat:1", rev); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Get(ctx, "chat:1"); !errors.Is(err, records.ErrNotFound) {
		t.Fatalf("a deleted record read on another replica: %v", err)
	}
	if err := tb.Delete(ctx, "chat:1", rev); err != nil {
		t.Fatalf("deleting a record that is gone: %v", err)
	}
	if l, err := a.Table("other").List(ctx); err != nil || len(l) != 0 {
		t.Fatalf("another table sees %d records (%v)", len(l), err)
	}
}
