package main

import (
	"fmt"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/runtime/skills"
	"github.com/shipmyagent/ship/tools"
)

// newSkills builds the project's skill catalog (.claude/skills and
// ship.json skills.paths) and returns what it gives the agent: the
// skills_list and skills_load tools, and the system-prompt section that
// lists the skills. Nothing is read here: each run looks at the folders,
// so start-up stays fast and skills added later are seen. The catalog
// itself is returned for reloads of skills.paths.
func newSkills(cfg config.Config, log zerolog.Logger) (*skills.Catalog, []agent.Tool, func() string, error) {
	cat, err := skills.New(skills.Options{ProjectDir: cfg.Dir, Paths: cfg.Skills.Paths, Logger: log})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("setting up skills: %w", err)
	}
	return cat, tools.Skills(cat), cat.PromptSection, nil
}
