package records

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A record written to a File table is there after the process starts
// again, and revisions go on growing, so a write that read before the
// restart cannot overwrite one made after it.
func TestFileKeepsRecordsAcrossReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state", "q.json")
	f, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r1, err := f.Put(ctx, "a", []byte(`{"x":1}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Put(ctx, "a", []byte(`{"x":2}`), 0); !errors.Is(err, ErrConflict) {
		t.Fatalf("creating an existing record: %v, want ErrConflict", err)
	}
	if _, err := f.Put(ctx, "b", []byte("b"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Delete(ctx, "b", r1+1); err != nil {
		t.Fatal(err)
	}

	g, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := g.Get(ctx, "a")
	if err != nil || string(r.Value) != `{"x":1}` || r.Rev != r1 {
		t.Fatalf("after reopening: %+v %v", r, err)
	}
	if _, err := g.Get(ctx, "b"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a deleted record came back: %v", err)
	}
	r2, err := g.Put(ctx, "a", []byte(`{"x":3}`), r1)
	if err != nil || r2 <= r1+1 {
		t.Fatalf("revision after reopening %d (err %v), want above %d", r2, err, r1+1)
	}
}

// A file that does not parse is refused rather than read as empty: an
// empty table would drop what the file held at the next write.
func TestFileRefusesACorruptFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q.json")
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFile(path); err == nil {
		t.Fatal("a corrupt file opened as a table")
	}
	if b, _ := os.ReadFile(path); string(b) != "{not json" {
		t.Fatalf("the corrupt file was changed: %q", b)
	}
}
