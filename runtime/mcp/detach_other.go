//go:build !unix

package mcp

import "os/exec"

// detach leaves the process as it is where process groups are not
// available.
func detach(*exec.Cmd) {}
