//go:build !unix

package chat

import "os"

// lockDir is a no-op where flock is not available; run one ship per project.
func lockDir(string) (*os.File, error) { return nil, nil }
