package config

import (
	"errors"
	"strings"
)

// maxBackgroundPattern bounds one entry of mcp.servers.*.background; a
// tool name is far shorter.
const maxBackgroundPattern = 256

// RunsInBackground reports whether a call of the server's tool (its own
// name) always runs as a background job.
func (c MCPConfig) RunsInBackground(server, tool string) bool {
	s, ok := c.Servers[server]
	return ok && s.RunsInBackground(tool)
}

// HasBackground reports whether any server runs calls in the background,
// so background jobs are needed even without exec_shell.
func (c MCPConfig) HasBackground() bool {
	for _, s := range c.Servers {
		if len(s.Background) > 0 {
			return true
		}
	}
	return false
}

// RunsInBackground reports whether a call of tool matches Background: an
// entry is the tool's exact name, or a prefix followed by one "*".
func (s MCPServer) RunsInBackground(tool string) bool {
	for _, p := range s.Background {
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			if strings.HasPrefix(tool, prefix) {
				return true
			}
		} else if p == tool {
			return true
		}
	}
	return false
}

// validBackground checks the patterns: not empty, "*" only as the last
// character, so what an entry matches is plain to read.
func validBackground(list []string) error {
	for _, p := range list {
		switch {
		case strings.TrimSpace(p) == "":
			return errors.New("an entry is empty")
		case len(p) > maxBackgroundPattern:
			return errors.New("an entry is longer than 256 characters")
		case strings.Contains(strings.TrimSuffix(p, "*"), "*"):
			return errors.New(`"*" may only end an entry (a prefix such as "build_*")`)
		}
	}
	return nil
}
