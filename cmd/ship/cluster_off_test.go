//go:build !cluster

package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/config"
)

// The default binary has no cluster mode: a cluster section, embedded
// server or external NATS alike, is a clear error at start, before
// anything is written, and so is `ship export`.
func TestTheDefaultBuildRefusesClusterModeClearly(t *testing.T) {
	for name, section := range map[string]string{
		"embedded": `{"nats": {"embedded": {"listen": "127.0.0.1:-1"}}}`,
		"url":      `{"nats": {"url": "nats://127.0.0.1:4222"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, config.FileName), []byte(`{"cluster": `+section+`}`), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(dir, func(string) (string, bool) { return "", false })
			if err != nil {
				t.Fatal(err)
			}
			rep, err := joinCluster(context.Background(), cfg, zerolog.Nop())
			if rep != nil || !errors.Is(err, errNoClusterMode) || !strings.Contains(err.Error(), "-tags cluster") {
				t.Fatalf("joinCluster = %v, %v; want errNoClusterMode naming -tags cluster", rep, err)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("the project folder holds %d entries, want only ship.json", len(entries))
			}
		})
	}
	cmd := newExportCmd()
	cmd.SetArgs([]string{t.TempDir()})
	cmd.SetOut(&strings.Builder{})
	cmd.SetErr(&strings.Builder{})
	if err := cmd.Execute(); !errors.Is(err, errNoClusterMode) {
		t.Errorf("ship export = %v, want errNoClusterMode", err)
	}
}
