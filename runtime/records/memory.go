package records

import (
	"context"
	"sync"
)

// Memory is a Table in this process's memory: for tests, and for stores
// that run alone without a file. Safe for concurrent use.
type Memory struct {
	mu   sync.Mutex
	rev  uint64
	recs map[string]Record
}

// NewMemory returns an empty Memory table.
func NewMemory() *Memory { return &Memory{recs: map[string]Record{}} }

// Get implements Table.
func (m *Memory) Get(ctx context.Context, key string) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.recs[key]
	if !ok {
		return Record{}, ErrNotFound
	}
	r.Value = append([]byte(nil), r.Value...)
	return r, nil
}

// Put implements Table.
func (m *Memory) Put(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.recs[key].Rev != rev {
		return 0, ErrConflict
	}
	m.rev++
	m.recs[key] = Record{Key: key, Value: append([]byte(nil), value...), Rev: m.rev}
	return m.rev, nil
}

// Delete implements Table.
func (m *Memory) Delete(ctx context.Context, key string, rev uint64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.recs[key]
	if !ok {
		return nil
	}
	if cur.Rev != rev {
		return ErrConflict
	}
	delete(m.recs, key)
	return nil
}

// List implements Table.
func (m *Memory) List(ctx context.Context) ([]Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Record, 0, len(m.recs))
	for _, r := range m.recs {
		r.Value = append([]byte(nil), r.Value...)
		out = append(out, r)
	}
	return out, nil
}
