//go:build !unix

package tools

import (
	"context"
	"errors"
)

// errExecUnsupported is what exec_shell answers where process groups are
// not available.
var errExecUnsupported = errors.New("exec_shell is not supported on this platform (it needs Unix process groups)")

// runGroup is not supported off Unix: exec_shell could not promise to stop
// every process a command starts.
func runGroup(context.Context, runSpec) (runOutcome, error) {
	return runOutcome{}, errExecUnsupported
}
