package config

import (
	"fmt"
	"time"
)

// ShutdownConfig is the "shutdown" section of ship.json: how a SIGTERM
// drains (cmd/ship/drain.go).
type ShutdownConfig struct {
	// GraceSeconds is how long running turns may take to finish after
	// SIGTERM before they are cut off (default 30). Service managers kill
	// a process that outlives their own stop timeout (systemd
	// TimeoutStopSec, 90 s by default; Docker's stop_grace_period, 10 s by
	// default): set theirs above this.
	GraceSeconds int `json:"graceSeconds,omitempty"`
}

// DefaultShutdownGrace is how long running turns may finish after SIGTERM
// when ship.json does not say.
const DefaultShutdownGrace = 30 * time.Second

// maxShutdownGrace bounds shutdown.graceSeconds: a drain longer than an
// hour is a process that will not stop.
const maxShutdownGrace = time.Hour

// Grace is shutdown.graceSeconds as a duration, the default when unset.
func (s ShutdownConfig) Grace() time.Duration {
	if s.GraceSeconds == 0 {
		return DefaultShutdownGrace
	}
	return time.Duration(s.GraceSeconds) * time.Second
}

// validate checks the section's values.
func (s ShutdownConfig) validate() error {
	if s.GraceSeconds < 0 || time.Duration(s.GraceSeconds)*time.Second > maxShutdownGrace {
		return fmt.Errorf("%w: shutdown.graceSeconds is %d; it must be between 1 and %d (0 or absent: %d)",
			ErrInvalid, s.GraceSeconds, int(maxShutdownGrace/time.Second), int(DefaultShutdownGrace/time.Second))
	}
	return nil
}
