package config

import (
	"fmt"
	"strings"
	"unicode"
)

// SkillsConfig is the "skills" section of ship.json. Skills are always
// read from <project>/.claude/skills; Paths adds folders (outside the
// project only when listed here).
type SkillsConfig struct {
	// Paths are folders of skill folders (<path>/<id>/SKILL.md): relative
	// to the project, absolute, or under the home folder ("~/...").
	Paths []string `json:"paths,omitempty"`
}

// validate checks each path is one: a "${VAR}" that expanded to nothing
// or a stray "" must not quietly mean the project folder.
func (s SkillsConfig) validate() error {
	for i, p := range s.Paths {
		switch {
		case strings.TrimSpace(p) == "":
			return fmt.Errorf("%w: skills.paths[%d] is empty: name a folder of skill folders, or remove the entry", ErrInvalid, i)
		case strings.ContainsFunc(p, unicode.IsControl):
			return fmt.Errorf("%w: skills.paths[%d] %q contains a control character", ErrInvalid, i, p)
		case strings.HasPrefix(p, "~") && p != "~" && !strings.HasPrefix(p, "~/"):
			return fmt.Errorf("%w: skills.paths[%d] %q: only \"~/\" (your home folder) is expanded; write the folder's full path", ErrInvalid, i, p)
		}
	}
	return nil
}
