package config

import (
	"fmt"
	"time"
)

// JobsConfig is tools.jobs: the background jobs exec_shell may start
// (background: true) and the MCP calls a server's "background" names. Jobs
// are on whenever exec_shell is or a server has such a list; these bound
// them.
type JobsConfig struct {
	// PerChat and Max bound the running jobs of one chat (default 3) and
	// of the whole ship (default 10).
	PerChat int `json:"perChat,omitempty"`
	Max     int `json:"max,omitempty"`
	// MaxSeconds is each job's timeout (default 1800); a call may ask
	// less.
	MaxSeconds int `json:"maxSeconds,omitempty"`
	// Off switches background jobs off: exec_shell then runs every
	// command in the turn.
	Off bool `json:"off,omitempty"`
}

// Bounds of tools.jobs: a mistyped number must not start a thousand
// shells or one that runs for a week.
const (
	maxJobs       = 1000
	maxJobSeconds = 7 * 24 * 3600
)

func (j JobsConfig) validate() error {
	if j.PerChat < 0 || j.PerChat > maxJobs || j.Max < 0 || j.Max > maxJobs {
		return fmt.Errorf("%w: tools.jobs.perChat and tools.jobs.max must be between 1 and %d", ErrInvalid, maxJobs)
	}
	if j.MaxSeconds < 0 || j.MaxSeconds > maxJobSeconds {
		return fmt.Errorf("%w: tools.jobs.maxSeconds must be between 1 and %d", ErrInvalid, maxJobSeconds)
	}
	return nil
}

// MaxDuration is tools.jobs.maxSeconds as a duration (zero: the default).
func (j JobsConfig) MaxDuration() time.Duration { return time.Duration(j.MaxSeconds) * time.Second }
