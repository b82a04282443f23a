// Package cluster runs ship as one replica of a group sharing NATS
// JetStream: the queue is a stream split into partitions, each run by one
// replica at a time under a lease; run state (the pending-work journal's
// send intents), dedupe claims, leases and the replica list are KV
// buckets; events travel over a NATS subject. The chat log lives in
// runtime/cluster/chatlog. Nothing here runs unless cluster config is set.
package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// Names of what ship keeps in JetStream. They are part of the on-disk
// contract: replicas of different versions must agree on them.
const (
	QueueStream   = "SHIP_QUEUE"
	queueSubject  = "ship.queue"   // ship.queue.<partition>
	eventsSubject = "ship.events"  // every run's events, from every replica
	outcomeSubj   = "ship.outcome" // ship.outcome.<requestId>: a run's end, to whoever waits
	bucketLeases  = "ship_leases"
	bucketMembers = "ship_replicas"
	bucketRuns    = "ship_runs"
	bucketClaims  = "ship_claims"
	bucketOffsets = "ship_offsets"
)

// Timings. A lease outlives its holder by at most leaseTTL, so a dead
// replica's connections and partitions are taken over within about
// leaseTTL + leaseRetry.
const (
	leaseTTL    = 8 * time.Second
	leaseRenew  = 2 * time.Second
	leaseRetry  = 1 * time.Second
	memberTTL   = 8 * time.Second
	memberBeat  = 2 * time.Second
	claimTTL    = 24 * time.Hour
	runStateTTL = 7 * 24 * time.Hour
	// setupBudget is how long start-up waits for JetStream to be usable:
	// routed servers elect a meta leader first.
	setupBudget = 90 * time.Second
)

// Options configure a replica's connection to the group.
type Options struct {
	// Replica names this process; Boot (random) tells its restarts apart.
	Replica string
	// URL is an external NATS; Embedded runs a server in-process instead.
	URL      string
	Embedded *Embedded
	Token    string
	// Replicas is JetStream's copy count for every stream and bucket.
	Replicas int
	// Partitions is how many slices the queue is hashed into; 0 takes the
	// count the queue stream records (partitionCount).
	Partitions int
	// Capacity is how many items the queue stream holds at most, queued
	// or running, cluster-wide (queue.capacity; default 1000): JetStream
	// refuses more, and the front door answers "busy".
	Capacity int
	// Addr is this replica's HTTP address, shown in status.
	Addr   string
	Logger zerolog.Logger
}

// Node is one replica's connection to the group: the NATS connection, the
// JetStream context and the buckets ship keeps.
type Node struct {
	opts Options
	// configuredPartitions is Options.Partitions as given (0: the
	// queue's); opts.Partitions is the count in use once setup ran.
	configuredPartitions int
	boot                 string
	srv                  *server.Server // nil with an external NATS
	nc                   *nats.Conn
	js                   jetstream.JetStream
	log                  zerolog.Logger
	leases               jetstream.KeyValue
	member               jetstream.KeyValue
	runs                 jetstream.KeyValue
	claims               jetstream.KeyValue
	offs                 jetstream.KeyValue
	state                jetstream.KeyValue
	queue                jetstream.Stream
	files                jetstream.ObjectStore // received files (files.go)
}

// Start connects this replica (starting the embedded server first when
// configured) and makes sure the queue stream and buckets exist.
func Start(ctx context.Context, opts Options) (*Node, error) {
	if opts.Replicas < 1 {
		opts.Replicas = 1
	}
	if opts.Partitions < 0 {
		opts.Partitions = 0
	}
	if opts.Capacity < 1 {
		opts.Capacity = 1000
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	n := &Node{opts: opts, configuredPartitions: opts.Partitions, boot: hex.EncodeToString(b), log: opts.Logger.With().Str("replica", opts.Replica).Logger()}
	var copts []nats.Option
	copts = append(copts, nats.Name("ship "+opts.Replica), nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond))
	copts = append(copts, connLogging(n.log)...)
	if opts.Token != "" {
		copts = append(copts, nats.Token(opts.Token))
	}
	url := opts.URL
	if opts.Embedded != nil {
		srv, err := startEmbedded(opts.Replica, opts.Token, *opts.Embedded, n.log)
		if err != nil {
			return nil, err
		}
		n.srv = srv
		copts = append(copts, nats.InProcessServer(srv))
		url = ""
	}
	nc, err := nats.Connect(url, copts...)
	if err != nil {
		n.shutdownServer()
		return nil, fmt.Errorf("connecting to NATS: %w", redactErr(err, opts.Token))
	}
	n.nc = nc
	n.js, err = jetstream.New(nc)
	if err != nil {
		n.Close()
		return nil, fmt.Errorf("opening JetStream: %w", err)
	}
	if err := n.setup(ctx); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// setup creates (or updates) the queue stream and the buckets, retrying
// while a routed JetStream is still electing its leaders.
func (n *Node) setup(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, setupBudget)
	defer cancel()
	r := n.opts.Replicas
	// Each stream and bucket is created on its own, all at once and each
	// retried alone: on a fresh routed cluster every one waits for its own
	// leader election (seconds each), and one attempt for all of them in
	// turn outlasted the attempt's timeout again and again.
	steps := []func(ctx context.Context) error{func(ctx context.Context) error {
		// The partition count the stream records is kept as it is here
		// (a new stream records this replica's); agreePartitions checks
		// it once every bucket exists.
		var existing *jetstream.StreamInfo
		if s, err := n.js.Stream(ctx, QueueStream); err == nil {
			existing = s.CachedInfo()
		} else if !errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("stream %s: %w", QueueStream, err)
		}
		count, recorded := partitionCount(n.configuredPartitions, existing)
		n.opts.Partitions = count
		meta := map[string]string{metaPartitions: strconv.Itoa(count)}
		if recorded != "" {
			meta[metaPartitions] = recorded
		}
		var err error
		n.queue, err = n.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name:        QueueStream,
			Description: "ship's queue: accepted messages until their run is done",
			Subjects:    []string{queueSubject + ".*"},
			Retention:   jetstream.LimitsPolicy,
			// queue.capacity, enforced by the servers: the stream refuses
			// what would pass it rather than grow without bound.
			MaxMsgs:    int64(n.opts.Capacity),
			Discard:    jetstream.DiscardNew,
			Storage:    jetstream.FileStorage,
			Replicas:   r,
			Duplicates: 2 * time.Minute,
			Metadata:   meta,
		})
		if err != nil {
			return fmt.Errorf("stream %s: %w", QueueStream, err)
		}
		return nil
	}}
	buckets := []struct {
		dst  *jetstream.KeyValue
		name string
		ttl  time.Duration
		desc string
	}{
		{&n.leases, bucketLeases, leaseTTL, "who holds each platform connection and queue partition"},
		{&n.member, bucketMembers, memberTTL, "the replicas alive now"},
		{&n.runs, bucketRuns, runStateTTL, "runs begun: attempts, send intents, streamed replies"},
		{&n.claims, bucketClaims, claimTTL, "platform message ids taken, cluster-wide"},
		{&n.offs, bucketOffsets, 0, "where each platform connection resumes"},
		{&n.state, bucketState, 0, "shared records: approvals and grants, model choices, task slots, contacts"},
	}
	steps = append(steps, n.setupFiles)
	for _, bk := range buckets {
		steps = append(steps, func(ctx context.Context) error {
			kv, err := n.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
				Bucket: bk.name, Description: bk.desc, TTL: bk.ttl, History: 1, Replicas: r, Storage: jetstream.FileStorage,
			})
			if err != nil {
				return fmt.Errorf("bucket %s: %w", bk.name, err)
			}
			*bk.dst = kv
			return nil
		})
	}
	errs := make([]error, len(steps))
	var wg sync.WaitGroup
	for i, step := range steps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = retry(ctx, n.log, "setting up JetStream", step)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return retry(ctx, n.log, "checking the partition count", n.agreePartitions)
}

// retry calls fn until it succeeds or ctx ends; JetStream answers "no
// leader" or times out for a while after servers start or one dies.
func retry(ctx context.Context, log zerolog.Logger, doing string, fn func(ctx context.Context) error) error {
	wait := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := fn(actx)
		cancel()
		if err == nil {
			return nil
		}
		if p, ok := err.(permanent); ok {
			return p.error
		}
		if errors.Is(err, nats.ErrConnectionClosed) {
			return fmt.Errorf("%s: %w", doing, err) // closed by us: shutting down
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", doing, err)
		}
		if attempt%10 == 0 {
			log.Warn().Err(err).Int("attempt", attempt).Msg(doing + ": JetStream not ready yet; retrying")
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", doing, err)
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// permanent marks an error retrying cannot mend.
type permanent struct{ error }

// connLogging sends what the NATS client would print (a subscription that
// fell behind and dropped messages, a lost or regained connection) to the
// replica's log.
func connLogging(log zerolog.Logger) []nats.Option {
	return []nats.Option{
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			ev := log.Warn().Err(err)
			if sub != nil {
				ev = ev.Str("subject", sub.Subject)
			}
			ev.Msg("NATS client error")
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			log.Warn().Err(err).Msg("disconnected from NATS; reconnecting")
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info().Str("server", nc.ConnectedServerName()).Msg("reconnected to NATS")
		}),
	}
}

// hotPathBudget is how long a message's path (claim, log, queue) waits
// for JetStream after a server died: a new stream leader is elected within
// a few seconds, and a refused message would cost the user a retry.
const hotPathBudget = 10 * time.Second

// retryHot retries fn within hotPathBudget (and ctx).
func retryHot(ctx context.Context, n *Node, doing string, fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, hotPathBudget)
	defer cancel()
	return retry(ctx, n.log, doing, fn)
}

// JetStream is the replica's JetStream context (the chat log opens its
// stream through it).
func (n *Node) JetStream() jetstream.JetStream { return n.js }

// Replica is this replica's name.
func (n *Node) Replica() string { return n.opts.Replica }

// Replicas is JetStream's copy count.
func (n *Node) Replicas() int { return n.opts.Replicas }

// Close flushes what is on its way (briefly: NATS may be gone) and stops
// the embedded server.
func (n *Node) Close() {
	if n.nc != nil {
		_ = n.nc.FlushTimeout(time.Second)
		n.nc.Close()
	}
	n.shutdownServer()
}

func (n *Node) shutdownServer() {
	if n.srv != nil {
		n.srv.Shutdown()
		n.srv.WaitForShutdown()
	}
}

// redactErr keeps a NATS token out of an error's text.
func redactErr(err error, token string) error {
	if token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), token, "[redacted]"))
}

// WhenReady retries fn (opening something else on JetStream, such as the
// chat log) while a routed JetStream still elects its leaders, within the
// start-up budget.
func (n *Node) WhenReady(ctx context.Context, doing string, fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, setupBudget)
	defer cancel()
	return retry(ctx, n.log, doing, fn)
}

// ClientURL is the embedded server's client URL ("" without an embedded
// server or client port): what other replicas' tools connect to.
func (n *Node) ClientURL() string {
	if n.srv == nil || n.opts.Embedded.Listen == "" {
		return ""
	}
	return n.srv.ClientURL()
}
