package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/runtime/engine"
)

// clusterFrames matches the stack frames of anything cluster mode runs: the
// NATS client, an embedded server and ship's cluster package. (Linking
// nats-server also runs its pse package's once-a-second CPU sample, a
// package init no caller can turn off; its frames, ".../server/pse.", do
// not match.)
var clusterFrames = regexp.MustCompile(`nats-io/nats\.go|nats-io/nats-server/v2/server\.|ship/runtime/cluster`)

// The one binary links cluster mode, but a project without a cluster
// section starts none of it: joinCluster gives the nil replica, opens no
// connection, starts no goroutine, writes nothing, and the nil replica does
// what a process on its own does.
func TestWithoutAClusterSectionNothingOfClusterModeStarts(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, config.FileName), []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(dir, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rep, err := joinCluster(ctx, cfg, zerolog.Nop())
	if rep != nil || err != nil {
		t.Fatalf("joinCluster = %v, %v; want the nil replica", rep, err)
	}
	var stacks bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&stacks, 1); err != nil {
		t.Fatal(err)
	}
	if m := clusterFrames.FindString(stacks.String()); m != "" {
		t.Errorf("a goroutine runs %s after joinCluster without a cluster section:\n%s", m, stacks.String())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the project folder holds %d entries, want only ship.json", len(entries))
	}

	opts := rep.engineOptions(engine.Options{JournalPath: "journal"})
	if opts.JournalPath != "journal" || opts.Store != nil || opts.Shared != nil {
		t.Errorf("the nil replica changed the engine's options: %+v", opts)
	}
	if rep.gate() != nil || rep.status() != nil {
		t.Error("the nil replica gates the platforms or reports a cluster status")
	}
	held := false
	if err := rep.hold(ctx, "conn.scheduler", func(context.Context) error { held = true; return nil }); err != nil || !held {
		t.Errorf("hold = %v, ran %v; want fn run at once", err, held)
	}
}

// `ship export` is part of every binary; without a NATS to read from it
// says where one is configured.
func TestExportIsAlwaysAvailable(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, config.FileName), []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runCLI(t, "export", "--help"); code != 0 || !strings.Contains(out, "JetStream") {
		t.Fatalf("ship export --help: exit %d\n%s", code, out)
	}
	code, _, stderr := runCLI(t, "export", dir)
	if code != 1 || !strings.Contains(stderr, "no NATS to export from") {
		t.Fatalf("ship export without NATS: exit %d, %q; want the refusal naming --nats", code, stderr)
	}
}
