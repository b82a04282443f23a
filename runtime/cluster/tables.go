package cluster

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/shipmyagent/ship/runtime/records"
)

// bucketState holds every shared store's records (approvals, grants,
// model choices, task slots, contacts), one key per record:
// <table>.<base64url(key)>. One bucket rather than one per store: each
// bucket is a Raft group of its own, elected at every start.
const bucketState = "ship_state"

// Table returns the shared records of one store (records.Table), kept in
// the ship_state bucket. name is a short word ("approvals", "models").
func (n *Node) Table(name string) records.Table {
	return &table{n: n, prefix: name + "."}
}

// table is a records.Table over the ship_state bucket. Reads go to the
// stream leader (leaderGet), writes carry the revision they read (KV
// create and update with expected revision), and a leader election in
// between is ridden out within the hot-path budget.
type table struct {
	n      *Node
	prefix string
}

func (t *table) key(k string) (string, error) {
	if k == "" {
		return "", errors.New("an empty record key")
	}
	return t.prefix + base64.RawURLEncoding.EncodeToString([]byte(k)), nil
}

// Get implements records.Table.
func (t *table) Get(ctx context.Context, key string) (records.Record, error) {
	k, err := t.key(key)
	if err != nil {
		return records.Record{}, err
	}
	var v kvValue
	err = retryHot(ctx, t.n, "reading a shared record", func(ctx context.Context) error {
		var err error
		v, err = t.n.leaderGet(ctx, bucketState, k)
		if errors.Is(err, errNoValue) {
			return permanent{records.ErrNotFound}
		}
		return err
	})
	if err != nil {
		return records.Record{}, err
	}
	return records.Record{Key: key, Value: v.data, Rev: v.rev}, nil
}

// Put implements records.Table.
func (t *table) Put(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	k, err := t.key(key)
	if err != nil {
		return 0, err
	}
	var out uint64
	err = retryHot(ctx, t.n, "writing a shared record", func(ctx context.Context) error {
		var err error
		if rev == 0 {
			out, err = t.n.state.Create(ctx, k, value)
		} else {
			out, err = t.n.state.Update(ctx, k, value, rev)
		}
		if isConflict(err) {
			return permanent{records.ErrConflict}
		}
		return err
	})
	return out, err
}

// Delete implements records.Table.
func (t *table) Delete(ctx context.Context, key string, rev uint64) error {
	k, err := t.key(key)
	if err != nil {
		return err
	}
	return retryHot(ctx, t.n, "deleting a shared record", func(ctx context.Context) error {
		err := t.n.state.Delete(ctx, k, jetstream.LastRevision(rev))
		if !isConflict(err) {
			return err
		}
		// Gone already (deleted by someone else) is what the caller wants.
		if _, gerr := t.n.leaderGet(ctx, bucketState, k); errors.Is(gerr, errNoValue) {
			return nil
		}
		return permanent{records.ErrConflict}
	})
}

// List implements records.Table: every current value, read by one
// watcher (its consumer is on the stream leader).
func (t *table) List(ctx context.Context) ([]records.Record, error) {
	var out []records.Record
	err := retryHot(ctx, t.n, "listing shared records", func(ctx context.Context) error {
		out = out[:0]
		return eachEntry(ctx, t.n.state, t.prefix+">", func(e jetstream.KeyValueEntry) {
			raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(e.Key(), t.prefix))
			if err == nil { // else not written by a table
				out = append(out, records.Record{Key: string(raw), Value: e.Value(), Rev: e.Revision()})
			}
		})
	})
	if err != nil {
		return nil, fmt.Errorf("listing shared records: %w", err)
	}
	return out, nil
}

// isConflict says a KV write found another revision than it expected.
func isConflict(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, jetstream.ErrKeyExists) {
		return true
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}
