package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Member is one live replica as it last reported itself.
type Member struct {
	Name        string   `json:"name"`
	Boot        string   `json:"boot"`
	Addr        string   `json:"addr,omitempty"`
	Started     int64    `json:"started"` // ms
	Seen        int64    `json:"seen"`    // ms: its last heartbeat
	Running     []string `json:"running"` // chat keys running there now
	Partitions  []int    `json:"partitions"`
	Concurrency int      `json:"concurrency"`
	// PartitionCount is the replica's cluster.partitions: a replica
	// starting with another refuses to (agreePartitions).
	PartitionCount int `json:"partitionCount,omitempty"`
}

// Local is what this replica reports about itself in each heartbeat.
type Local struct {
	Running     func() []string
	Partitions  func() []int
	Concurrency int
}

// Heartbeat keeps this replica in the members bucket until ctx ends, then
// takes it out, so the others rebalance at once.
func (n *Node) Heartbeat(ctx context.Context, local Local) {
	started := time.Now().UnixMilli()
	beat := func(ctx context.Context) {
		m := Member{Name: n.opts.Replica, Boot: n.boot, Addr: n.opts.Addr, Started: started, Seen: time.Now().UnixMilli(),
			Concurrency: local.Concurrency, Running: []string{}, Partitions: []int{}, PartitionCount: n.opts.Partitions}
		if local.Running != nil {
			m.Running = local.Running()
		}
		if local.Partitions != nil {
			m.Partitions = local.Partitions()
		}
		b, _ := json.Marshal(m)
		if _, err := n.member.Put(ctx, n.opts.Replica, b); err != nil && ctx.Err() == nil {
			n.log.Debug().Err(err).Msg("replica heartbeat")
		}
	}
	t := time.NewTicker(memberBeat)
	defer t.Stop()
	for {
		beat(ctx)
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = n.member.Delete(dctx, n.opts.Replica)
			cancel()
			return
		case <-t.C:
		}
	}
}

// Members lists the live replicas by name.
func (n *Node) Members(ctx context.Context) ([]Member, error) {
	var out []Member
	err := eachValue(ctx, n.member, jetstream.AllKeys, func(_ string, m Member) { out = append(out, m) })
	if err != nil {
		return nil, fmt.Errorf("listing replicas: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// liveReplicas lists the names of the live replicas, sorted. The keys
// suffice: balance asks every second and needs no heartbeat's content.
func (n *Node) liveReplicas(ctx context.Context) ([]string, error) {
	lister, err := n.member.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing replicas: %w", err)
	}
	var names []string
	for k := range lister.Keys() {
		names = append(names, k)
	}
	if err := ctx.Err(); err != nil {
		// The lister stops early without saying so: a partial list would
		// make a wrong share.
		return nil, fmt.Errorf("listing replicas: %w", err)
	}
	// A key written while the list is read may come twice.
	sort.Strings(names)
	return slices.Compact(names), nil
}

// alive reports whether replica name runs now in the incarnation boot.
func (n *Node) alive(ctx context.Context, name, boot string) (bool, error) {
	e, err := n.member.Get(ctx, name)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var m Member
	if json.Unmarshal(e.Value(), &m) != nil {
		return false, nil
	}
	return m.Boot == boot, nil
}

// eachValue calls fn with the decoded current value of every key of kv
// matching filter (values that do not decode are skipped).
func eachValue[T any](ctx context.Context, kv jetstream.KeyValue, filter string, fn func(key string, v T)) error {
	return eachEntry(ctx, kv, filter, func(e jetstream.KeyValueEntry) {
		var v T
		if json.Unmarshal(e.Value(), &v) == nil {
			fn(e.Key(), v)
		}
	})
}

// eachEntry calls fn with the current entry of every key of kv matching
// filter, all read by one watcher: listing the keys and then getting each
// took a round trip per key.
func eachEntry(ctx context.Context, kv jetstream.KeyValue, filter string, fn func(e jetstream.KeyValueEntry)) error {
	w, err := kv.Watch(ctx, filter, jetstream.IgnoreDeletes())
	if err != nil {
		return err
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case e := <-w.Updates():
			if e == nil { // every current value has come
				return nil
			}
			fn(e)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
