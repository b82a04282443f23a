package cluster

import (
	"errors"
	"net"

	"github.com/rs/zerolog"
)

// Embedded is the in-process NATS server of one replica
// (cluster.nats.embedded). Its fields match natsserver.Config's.
type Embedded struct {
	Listen   string   // client address ("" → no client port)
	Cluster  string   // route address ("" → not routed)
	Routes   []string // peers' route URLs
	StoreDir string
	// SyncAlways fsyncs every write before acknowledging it: with one
	// copy (nothing replicates it) that is what keeps an accepted message
	// through a machine crash, as store.durability "always" promises.
	SyncAlways bool
}

// Server is an embedded NATS server as this package uses it
// (*natsserver.Server).
type Server interface {
	// InProcessConn is a client connection that skips the network.
	InProcessConn() (net.Conn, error)
	// ClientURL is where other processes reach the server.
	ClientURL() string
	// Shutdown stops the server and waits until it has stopped.
	Shutdown()
}

// StartServerFunc starts the embedded server of replica name, requiring
// token from clients when it is not empty. A ship binary built with the
// embedded server passes one that runs runtime/cluster/natsserver; this
// package does not import it, so that a binary without it does not link
// nats-server.
type StartServerFunc func(name, token string, e Embedded, log zerolog.Logger) (Server, error)

// ErrNoEmbeddedServer is Start's error for Options.Embedded without
// Options.StartServer: the binary was built without the embedded server.
var ErrNoEmbeddedServer = errors.New("this ship binary was built without the embedded NATS server " +
	"(cluster.nats.embedded): build it with `go build -tags cluster ./cmd/ship`, or set cluster.nats.url to an external NATS")
