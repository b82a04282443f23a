package cluster

import (
	"context"
	"encoding/json"
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

// Sessions keeps a gateway session (the QQ session id and its last event
// sequence) in the same bucket, so the replica that takes the gateway over
// resumes the session and the platform replays what it missed.
type Sessions struct {
	n   *Node
	key string
}

// Sessions returns the saved session of connection name.
func (n *Node) Sessions(name string) *Sessions { return &Sessions{n: n, key: name + ".session"} }

type savedSession struct {
	ID  string `json:"id"`
	Seq uint32 `json:"seq"`
}

// LoadSession returns the saved session ("" when none).
func (s *Sessions) LoadSession(ctx context.Context) (string, uint32, error) {
	e, err := s.n.offs.Get(ctx, s.key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", 0, nil
	}
	if err != nil {
		return "", 0, fmt.Errorf("reading the %s: %w", s.key, err)
	}
	var v savedSession
	if err := json.Unmarshal(e.Value(), &v); err != nil {
		return "", 0, fmt.Errorf("reading the %s: %w", s.key, err)
	}
	return v.ID, v.Seq, nil
}

// SaveSession stores the session durably.
func (s *Sessions) SaveSession(ctx context.Context, id string, seq uint32) error {
	b, _ := json.Marshal(savedSession{ID: id, Seq: seq})
	if _, err := s.n.offs.Put(ctx, s.key, b); err != nil {
		return fmt.Errorf("saving the %s: %w", s.key, err)
	}
	return nil
}
