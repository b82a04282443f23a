package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"
)

// Offsets keeps where a single platform connection resumes (the Telegram
// update offset) in a KV bucket, so the replica that takes the connection
// over resumes where the last holder stopped.
type Offsets struct {
	n   *Node
	key string
}

// Offsets returns the resume point of connection name.
func (n *Node) Offsets(name string) *Offsets { return &Offsets{n: n, key: name} }

// LoadOffset returns the saved offset (0 when none).
func (o *Offsets) LoadOffset(ctx context.Context) (int64, error) {
	e, err := o.n.offs.Get(ctx, o.key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading the %s offset: %w", o.key, err)
	}
	v, err := strconv.ParseInt(string(e.Value()), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("reading the %s offset: %w", o.key, err)
	}
	return v, nil
}

// SaveOffset stores offset durably.
func (o *Offsets) SaveOffset(ctx context.Context, offset int64) error {
	if _, err := o.n.offs.Put(ctx, o.key, []byte(strconv.FormatInt(offset, 10))); err != nil {
		return fmt.Errorf("saving the %s offset: %w", o.key, err)
	}
	return nil
}
