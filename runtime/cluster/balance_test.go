package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/journal"
)

func TestSharesDifferByAtMostOneAndCoverEveryPartition(t *testing.T) {
	for _, total := range []int{1, 2, 4, 16, 17, 64, 128} {
		for n := 1; n <= 7; n++ {
			var live []string
			for i := range n {
				live = append(live, fmt.Sprintf("r%d", i+1))
			}
			sum, lo, hi := 0, total, 0
			for _, name := range live {
				s := shareOf(total, live, name)
				sum += s
				lo, hi = min(lo, s), max(hi, s)
			}
			if sum != total || hi-lo > 1 {
				t.Errorf("%d partitions over %d replicas: shares add up to %d, from %d to %d; want %d, differing by at most one",
					total, n, sum, lo, hi, total)
			}
		}
	}
	// 16 over 3 is 6/5/5: the ceiling for everyone left the last 4.
	live := []string{"r1", "r2", "r3"}
	if got := []int{shareOf(16, live, "r1"), shareOf(16, live, "r2"), shareOf(16, live, "r3")}; !slices.Equal(got, []int{6, 5, 5}) {
		t.Errorf("16 partitions over r1, r2, r3: shares %v, want [6 5 5]", got)
	}
	// A replica whose heartbeat is not listed yet counts itself in.
	if got := shareOf(16, []string{"r1", "r3"}, "r2"); got != 5 {
		t.Errorf("r2 not listed yet beside r1 and r3: share %d, want 5", got)
	}
	if got := shareOf(16, nil, "r1"); got != 16 {
		t.Errorf("alone and not listed yet: share %d, want 16", got)
	}
}

// Four partitions over three replicas were 2/2/0 when every replica took
// the ceiling share: the last to join ran nothing. Now they settle at
// 2/1/1 (a, first by name, runs the extra one), each partition held once.
func TestThreeReplicasSettleOnSharesDifferingByOne(t *testing.T) {
	a := startNode(t, "a", nil)
	b := startNode(t, "b", a)
	c := startNode(t, "c", a)
	rec := newRecorder()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var queues []*Queue
	for _, n := range []*Node{a, b, c} {
		q := n.NewQueue(QueueOptions{Concurrency: 1})
		queues = append(queues, q)
		wg.Add(2)
		go func() { defer wg.Done(); n.Heartbeat(ctx, Local{Partitions: q.Partitions}) }()
		go func() { defer wg.Done(); q.Run(ctx, rec.take(n.Replica(), q, func(journal.Item) bool { return true })) }()
	}
	waitFor(t, func() bool {
		held := map[int]bool{}
		var counts []int
		for _, q := range queues {
			ps := q.Partitions()
			counts = append(counts, len(ps))
			for _, p := range ps {
				held[p] = true
			}
		}
		return slices.Equal(counts, []int{2, 1, 1}) && len(held) == 4
	})
	cancel()
	wg.Wait()
}

// A replica started with another partition count than the queue's items
// were hashed under would read one chat from two partitions: it refuses to
// start while items wait or a live replica runs with the other count, and
// records its count once the queue is empty and nobody disagrees.
func TestAnotherPartitionCountIsRefusedUntilTheQueueIsEmpty(t *testing.T) {
	a := startNode(t, "a", nil) // 4 partitions
	qa := a.NewQueue(QueueOptions{Concurrency: 1})
	put(t, qa, "api:chat:x", "x-1")
	start := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		n, err := Start(ctx, Options{Replica: "b", Partitions: 8, URL: a.ClientURL(), Logger: zerolog.Nop()})
		if err == nil {
			n.Close()
		}
		return err
	}
	if err := start(); !errors.Is(err, errPartitionCount) || !strings.Contains(err.Error(), "holds 1 items hashed into 4 partitions") {
		t.Fatalf("starting with 8 partitions while an item waits under 4: %v; want refused", err)
	}

	if err := a.queue.Purge(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	beating := make(chan struct{})
	go func() { defer close(beating); a.Heartbeat(ctx, Local{Partitions: qa.Partitions}) }()
	waitFor(t, func() bool { m, _ := a.Members(context.Background()); return len(m) == 1 })
	if err := start(); !errors.Is(err, errPartitionCount) || !strings.Contains(err.Error(), "replica a runs with 4") {
		t.Fatalf("starting with 8 partitions beside a live replica with 4: %v; want refused", err)
	}

	cancel() // a leaves the group
	<-beating
	if err := start(); err != nil {
		t.Fatalf("starting with 8 partitions, the queue empty and nobody else: %v", err)
	}
	info, err := a.queue.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Config.Metadata[metaPartitions]; got != "8" {
		t.Errorf("the queue records %q partitions, want 8", got)
	}
}

func TestUnsetPartitionCountTakesTheQueues(t *testing.T) {
	recorded := func(v string) *jetstream.StreamInfo {
		info := &jetstream.StreamInfo{}
		if v != "" {
			info.Config.Metadata = map[string]string{metaPartitions: v}
		}
		return info
	}
	for _, tc := range []struct {
		name       string
		configured int
		existing   *jetstream.StreamInfo
		want       int
	}{
		{"a new queue", 0, nil, defaultPartitions},
		{"a queue recording 32", 0, recorded("32"), 32},
		{"a queue made before counts were recorded: the default then", 0, recorded(""), legacyPartitions},
		{"configured, a new queue", 8, nil, 8},
		{"configured, whatever the queue records (agreePartitions judges)", 8, recorded("32"), 8},
	} {
		if got, _ := partitionCount(tc.configured, tc.existing); got != tc.want {
			t.Errorf("%s: %d partitions, want %d", tc.name, got, tc.want)
		}
	}

	// Unset on every replica: the first makes the queue with the
	// default and records it, the next takes the record.
	start := func(name, url string, embedded *Embedded) *Node {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		n, err := Start(ctx, Options{Replica: name, URL: url, Embedded: embedded, Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(n.Close)
		return n
	}
	a := start("a", "", &Embedded{Listen: "127.0.0.1:-1", StoreDir: t.TempDir()})
	b := start("b", a.ClientURL(), nil)
	if a.opts.Partitions != defaultPartitions || b.opts.Partitions != defaultPartitions {
		t.Errorf("unset: a runs %d partitions, b %d; want %d", a.opts.Partitions, b.opts.Partitions, defaultPartitions)
	}
	info, err := b.queue.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Config.Metadata[metaPartitions]; got != strconv.Itoa(defaultPartitions) {
		t.Errorf("the queue records %q partitions, want %d", got, defaultPartitions)
	}
}
