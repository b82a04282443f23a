package console

import (
	"strings"
	"time"
)

// ConfigStatus is ship.json as the last reload left it: when the
// configuration in force was loaded, why the last attempt was refused (""
// when it was not), and the changed settings that wait for a restart.
// GET /api/status carries it as "config"; the Overview shows it.
type ConfigStatus struct {
	LoadedAt time.Time `json:"loadedAt"`
	// LastError says why the last reload was refused, naming the setting;
	// the configuration loaded at LoadedAt stays in force.
	LastError   string     `json:"lastError,omitempty"`
	LastErrorAt *time.Time `json:"lastErrorAt,omitempty"`
	// NeedsRestart are settings that differ from those ship started with
	// and take effect only at the next start.
	NeedsRestart []string `json:"needsRestart,omitempty"`
}

// writeConfig is the Overview's status line of ship.json: a warning when
// the last reload was refused or a changed setting waits for a restart,
// else when it was loaded.
func writeConfig(m *markup, cs *ConfigStatus) {
	if cs == nil {
		return
	}
	if cs.LastError != "" {
		m.open("p", "class", "warn", "role", "status")
		m.el("strong", "ship.json was not reloaded: ")
		m.text(cs.LastError + ". The configuration loaded at " + clock(cs.LoadedAt) + " stays in force until the file is fixed.")
		m.close("p")
	}
	if len(cs.NeedsRestart) > 0 {
		m.open("p", "class", "warn", "role", "status")
		m.text("Changed in ship.json, waiting for a restart: " + strings.Join(cs.NeedsRestart, ", ") + ".")
		m.close("p")
	}
	if cs.LastError == "" && len(cs.NeedsRestart) == 0 {
		m.el("p", "ship.json loaded at "+clock(cs.LoadedAt)+".", "class", "muted")
	}
}
