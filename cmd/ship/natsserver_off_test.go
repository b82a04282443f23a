//go:build !embeddednats

package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/cluster"
	"github.com/shipmyagent/ship/runtime/config"
)

// The default binary does not link the embedded NATS server: asking it
// for one is a clear error at start, before anything is written.
func TestTheDefaultBuildRefusesAnEmbeddedServerClearly(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, config.FileName),
		[]byte(`{"cluster": {"nats": {"embedded": {"listen": "127.0.0.1:-1"}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(dir, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	rep, err := joinCluster(context.Background(), cfg, zerolog.Nop())
	if rep != nil || !errors.Is(err, cluster.ErrNoEmbeddedServer) {
		t.Fatalf("joinCluster = %v, %v; want ErrNoEmbeddedServer", rep, err)
	}
	if _, err := os.Stat(cfg.Cluster.NATS.Embedded.StoreDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the embedded server's store %s exists (%v) though no server ran", cfg.Cluster.NATS.Embedded.StoreDir, err)
	}
}
