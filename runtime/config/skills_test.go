package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestSkillsPathsAreRead(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, FileName, `{"skills": {"paths": ["skills", "${TEAM_SKILLS}", "~/.claude/skills"]}}`)
	cfg, err := Load(dir, envOf(map[string]string{"TEAM_SKILLS": "/srv/team-skills"}))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"skills", "/srv/team-skills", "~/.claude/skills"}; !slices.Equal(cfg.Skills.Paths, want) {
		t.Errorf("skills.paths = %q, want %q", cfg.Skills.Paths, want)
	}
}

func TestBadSkillsPathsStopStartUp(t *testing.T) {
	for _, c := range []struct {
		file, want string
	}{
		{`{"skills": {"paths": [""]}}`, "skills.paths[0] is empty"},
		{`{"skills": {"paths": ["ok", "${UNSET_SKILLS_VAR}"]}}`, "skills.paths[1] is empty"},
		{`{"skills": {"paths": ["a\u0000b"]}}`, "control character"},
		{`{"skills": {"paths": ["~bob/skills"]}}`, `only "~/"`},
		{`{"skills": {"path": ["x"]}}`, "unknown field"},
		{`{"skills": {"paths": "x"}}`, "skills.paths"},
	} {
		dir := t.TempDir()
		write(t, dir, FileName, c.file)
		_, err := Load(dir, envOf(nil))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an invalid-configuration error saying %q", c.file, err, c.want)
		}
	}
}
