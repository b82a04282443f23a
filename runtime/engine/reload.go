package engine

import (
	"time"

	"github.com/shipmyagent/ship/runtime/events"
)

// ConfigReloaded tells the event stream that a configuration reload took
// effect: changed names the settings that changed, restart those of them
// that wait for a restart (names only: values may be secrets).
func (e *Engine) ConfigReloaded(changed, restart []string) {
	e.events.Publish(events.Event{Type: events.TypeConfigReloaded, Timestamp: time.Now().UnixMilli(),
		Settings: changed, Restart: restart})
}

// ConfigRefused tells the event stream that a configuration reload was
// refused and why (an error event with code CONFIG_INVALID); the last good
// configuration stays in force. why must hold no secret.
func (e *Engine) ConfigRefused(why string) {
	e.events.Publish(events.Event{Type: events.TypeError, Timestamp: time.Now().UnixMilli(),
		ErrorCode: events.ErrConfigInvalid, ErrorMessage: why})
}
