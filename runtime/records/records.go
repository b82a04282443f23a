// Package records is the seam for small keyed state that every replica of a
// cluster must see alike: approvals and grants, model choices, the
// scheduler's slots, the contacts book. A store keeps its own file when ship
// runs alone; in cluster mode it is handed a Table kept in JetStream
// (runtime/cluster) and goes through it instead.
//
// A Table is compare-and-swap on revisions: a write names the revision it
// read, and fails with ErrConflict when another writer (another replica)
// came first. That is what makes a read-modify-write safe across
// processes, without a lock service. Reads are read-your-writes: a Get
// after a Put that returned, on any replica, sees that Put or a later one.
//
// The package is a leaf (it imports nothing of ship), so the stores under
// runtime/ may use it without knowing of clusters.
package records

import (
	"context"
	"errors"
	"fmt"
)

// Errors a Table returns; callers branch on them with errors.Is.
var (
	// ErrNotFound means no record has the key.
	ErrNotFound = errors.New("no such record")
	// ErrConflict means the record is not at the revision the write named
	// (another writer changed, created or deleted it meanwhile).
	ErrConflict = errors.New("the record changed meanwhile")
)

// Record is one key's current value and its revision (never 0 for a stored
// record).
type Record struct {
	Key   string
	Value []byte
	Rev   uint64
}

// Table is one kind of record (one store's state), keyed by strings of any
// content (the Table encodes them as it needs).
type Table interface {
	// Get returns the record's latest value; ErrNotFound when there is none.
	Get(ctx context.Context, key string) (Record, error)
	// Put writes value when the record is still at rev (rev 0: when there
	// is no record), and returns the new revision; ErrConflict otherwise.
	Put(ctx context.Context, key string, value []byte, rev uint64) (uint64, error)
	// Delete removes the record when it is still at rev (ErrConflict
	// otherwise); deleting a record that is gone is not an error.
	Delete(ctx context.Context, key string, rev uint64) error
	// List returns every record, in no particular order.
	List(ctx context.Context) ([]Record, error)
}

// maxAttempts bounds Update's retries: each conflict means another writer
// made progress, so running out means heavy contention on one key.
const maxAttempts = 20

// Update reads key, hands its value to change (nil and false when there is
// none) and writes what change returns, retrying from the read when another
// writer came first. change may run several times and must not keep state
// between calls. It returns change's error unwrapped, without writing;
// delete true removes the record instead.
func Update(ctx context.Context, t Table, key string, change func(old []byte, exists bool) (value []byte, del bool, err error)) error {
	for range maxAttempts {
		r, err := t.Get(ctx, key)
		exists := err == nil
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		value, del, err := change(r.Value, exists)
		if err != nil {
			return err
		}
		switch {
		case del && !exists:
			return nil
		case del:
			err = t.Delete(ctx, key, r.Rev)
		default:
			_, err = t.Put(ctx, key, value, r.Rev)
		}
		if !errors.Is(err, ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("updating record %q: %w (%d attempts)", key, ErrConflict, maxAttempts)
}
