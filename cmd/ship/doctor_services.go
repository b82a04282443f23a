package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/runtime/mcp"
)

// checkMCP starts every MCP server as ship start does (runtime/mcp, the
// same environment and secrets rules) and waits until each is ready or has
// failed once, or the time is up.
func checkMCP(ctx context.Context, cfg config.Config) []checkResult {
	connect := mcp.DefaultConnectTimeout
	if d, ok := ctx.Deadline(); ok {
		connect = max(time.Until(d), time.Millisecond)
	}
	m := mcp.New(mcp.Options{
		Servers: cfg.MCP.Servers, Dir: cfg.Dir,
		DropEnv: config.SecretEnv, Secrets: cfg.Secrets(),
		// One attempt is the check: no reconnection inside the deadline.
		MinBackoff: time.Hour, MaxBackoff: time.Hour,
		ConnectTimeout: connect,
		Logger:         zerolog.Nop(),
	})
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	m.Start(runCtx)
	defer m.Close()
	settled := func() bool {
		for _, st := range m.Status() {
			if st.State == mcp.StateConnecting {
				return false
			}
		}
		return true
	}
	for {
		changed := m.Changed()
		if settled() || ctx.Err() != nil {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
		}
	}
	var out []checkResult
	for _, st := range m.Status() {
		check := "mcp " + st.Name
		fix := fmt.Sprintf("check mcp.servers.%s in ship.json (command, args, url, env) and run it by hand to see why", st.Name)
		switch st.State {
		case mcp.StateReady:
			out = append(out, pass(check, fmt.Sprintf("%s server started and lists %d tools", st.Transport, st.Tools)))
		case mcp.StateConnecting:
			out = append(out, fail(check, fmt.Sprintf("%s server did not answer within the time allowed", st.Transport),
				fix+"; a server fetched on first use (npx, uvx) may need a longer --timeout"))
		default:
			out = append(out, fail(check, fmt.Sprintf("%s server failed to start: %s", st.Transport, st.LastError), fix))
		}
	}
	return out
}

// checkCluster connects to the external NATS of cluster mode and asks
// JetStream for the account's information (nats.go jetstream AccountInfo),
// which fails when JetStream is off. An embedded server is started by
// ship start itself: there is nothing to reach yet.
func checkCluster(ctx context.Context, cfg config.Config) []checkResult {
	n := cfg.Cluster.NATS
	if n.URL == "" {
		return []checkResult{pass("cluster", "NATS runs inside ship (cluster.nats.embedded): started by ship start")}
	}
	opts := []nats.Option{nats.Name("ship doctor"), nats.MaxReconnects(0)}
	if d, ok := ctx.Deadline(); ok {
		opts = append(opts, nats.Timeout(max(time.Until(d), time.Millisecond)))
	}
	if n.Token != "" {
		opts = append(opts, nats.Token(n.Token))
	}
	nc, err := nats.Connect(n.URL, opts...)
	if err != nil {
		fix := "check cluster.nats.url (SHIP_NATS_URL) and that this machine reaches it"
		if errors.Is(err, nats.ErrAuthorization) {
			fix = "check SHIP_NATS_TOKEN (cluster.nats.token): the server refused it"
		}
		return []checkResult{fail("cluster", "cannot connect to NATS: "+err.Error(), fix)}
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return []checkResult{fail("cluster", "opening JetStream: "+err.Error(), "upgrade the NATS server to 2.9 or later")}
	}
	info, err := js.AccountInfo(ctx)
	if err != nil {
		fix := "check the NATS server and its JetStream storage"
		if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
			fix = "start nats-server with -js (or jetstream {} in its config) and enable it for this account"
		}
		return []checkResult{fail("cluster", "JetStream: "+err.Error(), fix)}
	}
	return []checkResult{pass("cluster", fmt.Sprintf("NATS at %s reachable, JetStream enabled (%d streams)", nc.ConnectedUrlRedacted(), info.Streams))}
}
