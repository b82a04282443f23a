package cluster

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"
)

// Embedded is the in-process NATS server of one replica
// (cluster.nats.embedded). Nothing of it starts unless a replica asks for
// one; linking nats-server still costs every ship about 3 MiB of idle RSS
// (BENCHMARKS.md "One binary").
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

// clusterName is the NATS cluster the embedded servers form.
const clusterName = "ship"

// readyBudget is how long Start waits for the server to take connections.
const readyBudget = 30 * time.Second

// startEmbedded runs the server of replica name (its NATS server name),
// requiring token from clients when it is not empty, and waits until it is
// ready.
func startEmbedded(name, token string, cfg Embedded, log zerolog.Logger) (*server.Server, error) {
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
	return srv, nil
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
