package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/shipmyagent/ship/runtime/config"
)

// lowDisk is the free space under which doctor warns: the chat logs, the
// journal and downloaded files stop being written when the disk is full.
const lowDisk = 1 << 30

// checkState says whether ship can write its state: it creates and removes
// a temporary file in .ship (or, before the first start, in the project
// folder, where start creates .ship), and reports low disk space.
func checkState(cfg config.Config) []checkResult {
	dir := cfg.StatePath()
	where := dir
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		where = cfg.Dir
	}
	f, err := os.CreateTemp(where, ".doctor-*")
	if err != nil {
		return []checkResult{fail("state", fmt.Sprintf("cannot write in %s: %v", where, errors.Unwrap(err)),
			"give the user running ship write access to "+where+" (in a container: mount a writable volume there)")}
	}
	name := f.Name()
	_ = f.Close()
	if err := os.Remove(name); err != nil {
		return []checkResult{fail("state", fmt.Sprintf("cannot remove files in %s: %v", where, errors.Unwrap(err)),
			"give the user running ship write access to "+where)}
	}
	out := []checkResult{pass("state", where+" is writable")}
	if where != dir {
		out[0] = pass("state", fmt.Sprintf("%s does not exist yet; ship start creates it in %s (writable)", config.StateDir, cfg.Dir))
	}
	if free, ok := freeBytes(where); ok && free < lowDisk {
		out = append(out, warn("disk", fmt.Sprintf("only %d MiB free for %s", free>>20, where),
			"free some space: chat logs, the journal and received files stop being written when the disk is full"))
	}
	return out
}
