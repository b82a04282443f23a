package main

import (
	"fmt"
	"strings"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/runtime/engine"
)

// withProfiles adds the agent profiles of ship.json (agents) to the
// engine's options. Their prompt files are read now, once: a change needs
// a restart, as the rest of the agents section does.
func withProfiles(o engine.Options, cfg config.Config, log zerolog.Logger) (engine.Options, error) {
	set, err := cfg.Profiles()
	if err != nil {
		return o, fmt.Errorf("reading the agent profiles: %w", err)
	}
	if names := set.Names(); len(names) > 0 {
		log.Info().Str("agents", strings.Join(names, ", ")).Msg("agent profiles")
	}
	o.Profiles = set
	return o, nil
}
