package records

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
)

func TestUpdateRetriesUntilNoOtherWriterCameFirst(t *testing.T) {
	ctx := context.Background()
	m := NewMemory()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				err := Update(ctx, m, "n", func(old []byte, _ bool) ([]byte, bool, error) {
					n, _ := strconv.Atoi(string(old))
					return []byte(strconv.Itoa(n + 1)), false, nil
				})
				if err != nil && !errors.Is(err, ErrConflict) {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	r, err := m.Get(ctx, "n")
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Value) != "80" {
		t.Fatalf("80 increments counted as %s: an update was lost", r.Value)
	}
}

func TestStaleWritesAreRefused(t *testing.T) {
	ctx := context.Background()
	m := NewMemory()
	rev, err := m.Put(ctx, "k", []byte("a"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Put(ctx, "k", []byte("b"), 0); !errors.Is(err, ErrConflict) {
		t.Fatalf("creating a record that exists: %v", err)
	}
	if _, err := m.Put(ctx, "k", []byte("c"), rev); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Put(ctx, "k", []byte("d"), rev); !errors.Is(err, ErrConflict) {
		t.Fatalf("writing at an old revision: %v", err)
	}
	if err := m.Delete(ctx, "k", rev); !errors.Is(err, ErrConflict) {
		t.Fatalf("deleting at an old revision: %v", err)
	}
	if err := Update(ctx, m, "k", func([]byte, bool) ([]byte, bool, error) { return nil, true, nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Get(ctx, "k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted record: %v", err)
	}
}
