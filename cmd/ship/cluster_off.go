//go:build !cluster

package main

import (
	"context"
	"errors"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/runtime/engine"
)

// errNoClusterMode is what a binary built without cluster mode says when
// asked for it. Linking NATS costs every ship process memory, also one that
// runs alone, so cluster mode is a build option (cluster.go).
var errNoClusterMode = errors.New("this ship binary was built without cluster mode: " +
	"build it with `go build -tags cluster ./cmd/ship` (README: Running as a cluster)")

// replica is always nil here: every method does what a process on its own
// does (cluster.go has the real one).
type replica struct{}

// joinCluster refuses a cluster section before anything is started or
// written.
func joinCluster(_ context.Context, cfg config.Config, _ zerolog.Logger) (*replica, error) {
	if cfg.Cluster.On() {
		return nil, errNoClusterMode
	}
	return nil, nil
}

func (*replica) engineOptions(o engine.Options) engine.Options { return o }
func (*replica) start(*engine.Engine, int) error               { return nil }
func (*replica) prepare([]adapters.Adapter)                    {}
func (*replica) gate() adapters.Gate                           { return nil }
func (*replica) status() func(context.Context) any             { return nil }
func (*replica) stopTaking()                                   {}
func (*replica) leave()                                        {}
func (*replica) closeUnused()                                  {}

func (*replica) hold(ctx context.Context, _ string, fn func(context.Context) error) error {
	return fn(ctx)
}

// newExportCmd keeps `ship export` listed, saying how to get it.
func newExportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "export [dir]",
		Short: "Copy the cluster's chat log from NATS JetStream into .ship/chats (needs a -tags cluster build)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(*cobra.Command, []string) error {
			return errNoClusterMode
		},
	}
}
