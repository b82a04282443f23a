package cluster

import (
	"context"
	"errors"
	"fmt"
)

// ResumePoints keeps where the platforms' single connections resume (the
// Telegram update offset, the QQ gateway session) in the ship_offsets KV
// bucket, so the replica that takes a connection over resumes where the
// last holder stopped. The platforms choose the keys and encode the values;
// it satisfies adapters.ResumePoints.
type ResumePoints struct {
	n *Node
}

// ResumePoints returns the replicas' shared resume points.
func (n *Node) ResumePoints() *ResumePoints { return &ResumePoints{n: n} }

// Load returns the value saved under key (nil when none), as the stream
// leader has it: a follower's older offset would fetch updates again.
func (p *ResumePoints) Load(ctx context.Context, key string) ([]byte, error) {
	v, err := p.n.leaderGet(ctx, bucketOffsets, key)
	if errors.Is(err, errNoValue) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the resume point %s: %w", key, err)
	}
	return v.data, nil
}

// Save stores value under key durably.
func (p *ResumePoints) Save(ctx context.Context, key string, value []byte) error {
	if _, err := p.n.offs.Put(ctx, key, value); err != nil {
		return fmt.Errorf("saving the resume point %s: %w", key, err)
	}
	return nil
}
