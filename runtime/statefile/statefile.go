// Package statefile writes ship's small state files under .ship (task
// state, per-chat model choices) so that a crash leaves either the old
// file or the new one, and the new one survives a power cut once Write
// returns.
package statefile

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/renameio/v2"
)

// Write replaces path with data: written to a temporary file in the same
// folder (made if missing), fsynced, renamed over path, and the folder
// fsynced so the rename itself is durable.
func Write(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	if err := renameio.WriteFile(path, data, 0o600, renameio.WithTempDir(dir)); err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}
