package config

// SkillsConfig is the "skills" section of ship.json. Skills are always
// read from <project>/.claude/skills; Paths adds folders (outside the
// project only when listed here).
type SkillsConfig struct {
	Paths []string `json:"paths,omitempty"`
}
