//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// detach puts a stdio server in a process group of its own: Ctrl+C in
// ship's terminal reaches ship, which then closes each server in order,
// instead of killing them all under the running calls.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
