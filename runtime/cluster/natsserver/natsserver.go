// Package natsserver runs a replica's in-process NATS server
// (nats-server/v2 with JetStream) for cluster.nats.embedded.
//
// It is a package of its own, handed to runtime/cluster as a
// cluster.StartServerFunc, because linking nats-server costs every ship
// process, cluster or not, about 2.8 MiB of idle RSS and 13 MB of binary
// (its packages' init functions and the runtime's start-up walk touch
// pages all over the bigger binary; see BENCHMARKS.md). The default ship
// binary therefore leaves cluster mode out; `go build -tags cluster ./cmd/ship`
// links it in.
package natsserver

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"
)

// Config is the server's part of cluster.nats.embedded. Its fields match
// cluster.Embedded's one for one, so one converts to the other.
type Config struct {
	Listen   string   // client address ("" → no client port)
	Cluster  string   // route address ("" → not routed)
	Routes   []string // peers' route URLs
	StoreDir string
	// SyncAlways fsyncs every write before acknowledging it: with one
	// copy (nothing replicates it) that is what keeps an accepted message
	// through a machine crash, as store.durability "always" promises.
	SyncAlways bool
}

// clusterName is the NATS cluster the embedded servers form.
const clusterName = "ship"

// readyBudget is how long Start waits for the server to take connections.
const readyBudget = 30 * time.Second

// Server is a running embedded NATS server.
type Server struct{ s *server.Server }

// Start runs the server of replica name (its NATS server name), requiring
// token from clients when it is not empty, and waits until it is ready.
func Start(name, token string, cfg Config, log zerolog.Logger) (*Server, error) {
	so := &server.Options{
		ServerName: name,
		JetStream:  true,
		StoreDir:   cfg.StoreDir,
		NoSigs:     true,
		// Ship's own health comes first: a JetStream that would take
		// more than this machine has is refused at start, not later.
		JetStreamMaxMemory: 256 << 20,
		Authorization:      token,
		SyncAlways:         cfg.SyncAlways,
	}
	if cfg.Listen == "" {
		so.DontListen = true
	} else {
		host, port, err := splitAddr(cfg.Listen)
		if err != nil {
			return nil, fmt.Errorf("cluster.nats.embedded.listen: %w", err)
		}
		so.Host, so.Port = host, port
	}
	if cfg.Cluster != "" {
		host, port, err := splitAddr(cfg.Cluster)
		if err != nil {
			return nil, fmt.Errorf("cluster.nats.embedded.cluster: %w", err)
		}
		so.Cluster = server.ClusterOpts{Name: clusterName, Host: host, Port: port}
		for _, r := range cfg.Routes {
			u, err := url.Parse(r)
			if err != nil {
				return nil, fmt.Errorf("cluster.nats.embedded.routes: %w", err)
			}
			so.Routes = append(so.Routes, u)
		}
	}
	srv, err := server.NewServer(so)
	if err != nil {
		return nil, fmt.Errorf("starting the embedded NATS server: %w", err)
	}
	srv.SetLoggerV2(natsLogger{log.With().Str("component", "nats").Logger()}, false, false, false)
	go srv.Start()
	if !srv.ReadyForConnections(readyBudget) {
		srv.Shutdown()
		return nil, fmt.Errorf("starting the embedded NATS server: not ready after %s (is %s or %s taken?)", readyBudget, cfg.Listen, cfg.Cluster)
	}
	return &Server{s: srv}, nil
}

// InProcessConn is a client connection that does not go through the
// network (nats.InProcessServer).
func (s *Server) InProcessConn() (net.Conn, error) { return s.s.InProcessConn() }

// ClientURL is the server's client URL, for other replicas' tools.
func (s *Server) ClientURL() string { return s.s.ClientURL() }

// Shutdown stops the server and waits until it has stopped.
func (s *Server) Shutdown() {
	s.s.Shutdown()
	s.s.WaitForShutdown()
}

func splitAddr(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return "", 0, fmt.Errorf("port %q: %w", p, err)
	}
	return host, port, nil
}

// natsLogger hands the embedded server's log to zerolog: its notices are
// debug (they are many while a cluster forms), warnings and errors stay.
type natsLogger struct{ log zerolog.Logger }

func (l natsLogger) Noticef(format string, v ...any) { l.log.Debug().Msgf(format, v...) }
func (l natsLogger) Warnf(format string, v ...any)   { l.log.Warn().Msgf(format, v...) }
func (l natsLogger) Fatalf(format string, v ...any)  { l.log.Error().Msgf(format, v...) }
func (l natsLogger) Errorf(format string, v ...any)  { l.log.Error().Msgf(format, v...) }
func (l natsLogger) Debugf(format string, v ...any)  { l.log.Trace().Msgf(format, v...) }
func (l natsLogger) Tracef(format string, v ...any)  { l.log.Trace().Msgf(format, v...) }
