package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// metaPartitions is the queue stream's metadata key recording the
// partition count its items are hashed under.
const metaPartitions = "ship_partitions"

// Partition counts when cluster.partitions is not set. A new queue gets
// defaultPartitions: 16 caps three replicas at 16/6 = 2.67 times one (the
// replica with 6 partitions has an eighth more work than the average),
// 64 at 64/22 = 2.91, for about 0.6 ms of CPU a second per partition at
// idle over three replicas (a lease renewal and an ordered consumer each;
// BENCHMARKS.md "Issue 28"). A queue made before the count was
// recorded was made by a ship whose count, when not set, was
// legacyPartitions: its replicas keep that one.
const (
	defaultPartitions = 64
	legacyPartitions  = 16
)

// partitionCount is the count a replica uses: the one configured, else the
// one the queue stream records (existing nil: no stream yet), else the
// default for a new queue or the old default for an unrecorded one.
// recorded is the stream's record as it stands ("" for none).
func partitionCount(configured int, existing *jetstream.StreamInfo) (count int, recorded string) {
	if existing != nil {
		recorded = existing.Config.Metadata[metaPartitions]
	}
	switch r, err := strconv.Atoi(recorded); {
	case configured > 0:
		return configured, recorded
	case err == nil && r > 0:
		return r, recorded
	case existing != nil:
		return legacyPartitions, recorded
	default:
		return defaultPartitions, recorded
	}
}

// errPartitionCount says this replica's cluster.partitions differs from the
// count the queue's items were hashed under, or from a live replica's.
var errPartitionCount = errors.New("cluster.partitions differs from the cluster's")

// agreePartitions makes sure every replica hashes chats with the same
// partition count. A chat's partition is its hash modulo the count: with
// two counts, one chat's items would sit in two partitions, read by two
// replicas at once and out of order, and items under a partition number
// past the new count would never be read. So a replica refuses to start
// while the queue holds items queued under another count, or another live
// replica runs with one; with the queue empty and nobody disagreeing it
// records its own count (the way to change it: stop every replica, and
// start them with the new count once the queue is empty). A stream made
// by a ship that recorded no count takes this replica's: such a ship's
// count came from the same ship.json, or was 16 when unset, which is what
// a replica without the setting takes for such a stream (partitionCount).
func (n *Node) agreePartitions(ctx context.Context) error {
	ours := n.opts.Partitions
	info, err := n.queue.Info(ctx)
	if err != nil {
		return fmt.Errorf("reading stream %s: %w", QueueStream, err)
	}
	members, err := n.Members(ctx)
	if err != nil {
		return err
	}
	for _, m := range members {
		if m.Name != n.opts.Replica && m.PartitionCount != 0 && m.PartitionCount != ours {
			return permanent{fmt.Errorf("%w: it is %d here, but replica %s runs with %d: set the same cluster.partitions on every replica",
				errPartitionCount, ours, m.Name, m.PartitionCount)}
		}
	}
	recorded, err := strconv.Atoi(info.Config.Metadata[metaPartitions])
	if err != nil || recorded == ours {
		return nil // recorded in setup, or as it was
	}
	if info.State.Msgs > 0 {
		return permanent{fmt.Errorf("%w: it is %d here, but the queue holds %d items hashed into %d partitions; "+
			"start every replica with cluster.partitions %d, and change it only once the queue is empty (status waiting 0) and every replica is stopped",
			errPartitionCount, ours, info.State.Msgs, recorded, recorded)}
	}
	cfg := info.Config
	cfg.Metadata = map[string]string{}
	for k, v := range info.Config.Metadata {
		if !strings.HasPrefix(k, "_nats.") { // the server's own keys
			cfg.Metadata[k] = v
		}
	}
	cfg.Metadata[metaPartitions] = strconv.Itoa(ours)
	s, err := n.js.UpdateStream(ctx, cfg)
	if err != nil {
		return fmt.Errorf("recording the partition count on stream %s: %w", QueueStream, err)
	}
	n.queue = s
	n.log.Warn().Int("was", recorded).Int("now", ours).Msg("the queue is empty: its partition count changes")
	return nil
}
