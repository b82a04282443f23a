// Cluster mode is always compiled in: a ship without a cluster section in
// ship.json gets a nil *replica, which starts nothing (no NATS connection,
// no embedded server, no goroutine, no listener), so the one binary serves
// both a process on its own and a replica of a group.

package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/cluster"
	"github.com/shipmyagent/ship/runtime/cluster/chatlog"
	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/runtime/contacts"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/events"
	"github.com/shipmyagent/ship/runtime/records"
	"github.com/shipmyagent/ship/runtime/usage"
)

// replica is what `ship start` adds in cluster mode: the connection to the
// group, the shared queue and the chat log in JetStream. A nil *replica is
// a process on its own, and every method then does what ship always did.
type replica struct {
	node  *cluster.Node
	queue *cluster.Queue
	store chat.Log
	// events is the engine's event bus, which the replica relays to and
	// from the others (engine.Options.Events).
	events *events.Bus
	log    zerolog.Logger

	stopRelay func()
	cancel    context.CancelFunc
	// stopBeat ends the heartbeat alone (drain, drain.go).
	stopBeat context.CancelFunc
	wg       sync.WaitGroup
}

// joinCluster connects to the group when ship.json has cluster config.
func joinCluster(ctx context.Context, cfg config.Config, log zerolog.Logger) (*replica, error) {
	if !cfg.Cluster.On() {
		return nil, nil
	}
	cl := cfg.Cluster
	opts := cluster.Options{
		Replica: cl.Replica, URL: cl.NATS.URL, Token: cl.NATS.Token, Replicas: cl.NATS.Replicas, Partitions: cl.Partitions,
		Capacity: cfg.Queue.Capacity,
		Addr:     net.JoinHostPort(cfg.Server.Host, strconv.Itoa(cfg.Server.Port)), Logger: log,
	}
	if e := cl.NATS.Embedded; e != nil {
		opts.Embedded = &cluster.Embedded{Listen: e.Listen, Cluster: e.Cluster, Routes: e.Routes, StoreDir: e.StoreDir,
			SyncAlways: cl.NATS.Replicas == 1 && cfg.Store.Durability == "always"}
	}
	log.Info().Str("replica", cl.Replica).Bool("embedded", opts.Embedded != nil).Int("copies", cl.NATS.Replicas).
		Msg("joining the cluster (waiting for JetStream)")
	node, err := cluster.Start(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("joining the cluster: %w", err)
	}
	var store *chatlog.Store
	err = node.WhenReady(ctx, "opening the chat log", func(ctx context.Context) error {
		var err error
		store, err = chatlog.Open(ctx, node.JetStream(), chatlog.Options{Replicas: cl.NATS.Replicas, Logger: log})
		return err
	})
	if err != nil {
		node.Close()
		return nil, fmt.Errorf("joining the cluster: opening the chat log: %w", err)
	}
	q := node.NewQueue(cluster.QueueOptions{Capacity: cfg.Queue.Capacity, Concurrency: cfg.Queue.Concurrency})
	return &replica{node: node, queue: q, store: store, events: events.NewBus(0), log: log}, nil
}

// engineOptions puts the engine in cluster mode: the shared chat log,
// queue, dedupe, run state and approvals instead of the local files, and
// the event bus the replica relays.
func (r *replica) engineOptions(o engine.Options) engine.Options {
	if r == nil {
		return o
	}
	o.Store, o.Shared, o.Claims, o.Runs = r.store, r.queue, r.node.Claims(), r.queue
	o.Approvals = r.node.Table("approvals")
	o.Events = r.events
	o.JournalPath = ""
	o.ModelChoices = r.node.Table("models")
	o.Queue.Capacity = r.queue.LocalCapacity()
	return o
}

// shareFiles makes every file store built from cfg keep received files
// in the group's object store too: the turn may run on another replica
// than the one that received the file.
func (r *replica) shareFiles(cfg config.Config) config.Config {
	if r == nil {
		return cfg
	}
	cfg.Files.Shared = r.node.Files()
	return cfg
}

// taskRecords is where the scheduler keeps each task's slots and runs:
// the shared table, so the next lease holder does not run a slot again.
// Alone, nil: state.json.
func (r *replica) taskRecords() records.Table {
	if r == nil {
		return nil
	}
	return r.node.Table("tasks")
}

// start relays events and begins taking queue partitions and heartbeats.
func (r *replica) start(eng *engine.Engine, concurrency int) error {
	if r == nil {
		return nil
	}
	stop, err := r.node.RelayEvents(r.events)
	if err != nil {
		return err
	}
	r.stopRelay = stop
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	beatCtx, stopBeat := context.WithCancel(ctx)
	r.stopBeat = stopBeat
	r.wg.Add(2)
	go func() { defer r.wg.Done(); r.queue.Run(ctx, eng.Take) }()
	go func() {
		defer r.wg.Done()
		r.node.Heartbeat(beatCtx, cluster.Local{Running: func() []string { return eng.QueueStats().RunningChatKeys },
			Partitions: r.queue.Partitions, Concurrency: concurrency})
	}()
	return nil
}

// hold runs fn only while this replica holds the single connection name
// (in cluster mode); alone, it just runs fn.
func (r *replica) hold(ctx context.Context, name string, fn func(context.Context) error) error {
	if r == nil {
		return fn(ctx)
	}
	return r.node.Hold(ctx, name, fn)
}

// gate is what the platform adapters hold their single connection under:
// the connection's lease (hold). Alone, nil: an adapter connects at once
// and never shows itself on standby.
func (r *replica) gate() adapters.Gate {
	if r == nil {
		return nil
	}
	return r.hold
}

// prepare points the platforms that resume their connection from saved
// state (adapters.Resumer) at the replicas' shared resume points.
func (r *replica) prepare(list []adapters.Adapter) {
	if r == nil {
		return
	}
	for _, a := range list {
		if a, ok := a.(adapters.Resumer); ok {
			a.KeepResumePointsIn(r.node.ResumePoints())
		}
	}
}

// status is the cluster part of /api/status.
func (r *replica) status() func(ctx context.Context) any {
	if r == nil {
		return nil
	}
	return func(ctx context.Context) any { return r.node.Status(ctx) }
}

// stopTaking stops reading the shared queue (shutdown, before the engine
// closes); leave gives the partitions back and leaves the group (after).
func (r *replica) stopTaking() {
	if r != nil && r.cancel != nil {
		r.cancel()
		r.wg.Wait()
	}
}

func (r *replica) leave() {
	if r == nil {
		return
	}
	r.stopTaking()
	r.queue.Release()
	if r.stopRelay != nil {
		r.stopRelay()
	}
	r.node.Close()
}

// closeUnused closes what joinCluster opened when start fails before the
// engine owns the store.
func (r *replica) closeUnused() {
	if r == nil {
		return
	}
	if err := r.store.Close(); err != nil {
		r.log.Debug().Err(err).Msg("closing the chat log")
	}
	r.node.Close()
}

// shareUsage makes the token counters cluster-wide: a budget counts the
// turns every replica answered. Each replica's files keep its own share.
func (r *replica) shareUsage(t *usage.Tally) {
	if r != nil && t != nil {
		t.Share(r.node.Table("usage"))
	}
}

// contacts is the contacts book every replica shares (cluster mode), or
// own, the project's file, alone.
func (r *replica) contacts(own *contacts.Book) *contacts.Book {
	if r == nil {
		return own
	}
	return contacts.OpenShared(r.node.Table("contacts"), r.log)
}
