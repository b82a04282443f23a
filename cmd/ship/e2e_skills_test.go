package main_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func writeSkillFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The model is told about the project's skills and those of skills.paths,
// and a skill added while ship runs is listed from the next message on.
func TestE2ESkillsReachTheModel(t *testing.T) {
	t.Parallel()
	fake := startFake(t, nil)
	dir := initProject(t)
	team := filepath.Join(t.TempDir(), "team-skills")
	writeSkillFile(t, filepath.Join(dir, ".claude", "skills", "release", "SKILL.md"),
		"---\nname: release-notes\ndescription: Write release notes from git log.\nallowed-tools: Bash(git log:*)\n---\nSteps.\n")
	writeSkillFile(t, filepath.Join(team, "oncall", "SKILL.md"), "---\ndescription: Page the on-call person.\n---\nSteps.\n")
	raw, err := os.ReadFile(filepath.Join(dir, "ship.json"))
	if err != nil {
		t.Fatal(err)
	}
	withSkills := strings.Replace(string(raw), "{", `{"skills": {"paths": [`+strconv.Quote(team)+`]},`, 1)
	if err := os.WriteFile(filepath.Join(dir, "ship.json"), []byte(withSkills), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startShip(t, dir, modelEnv(fake))

	p.mustExecute(t, "", "hello")
	first := fake.Requests()[0]
	system := first.Messages[0].Content
	for _, want := range []string{"- release-notes: Write release notes from git log.", "- oncall: Page the on-call person."} {
		if !strings.Contains(system, want) {
			t.Errorf("system prompt lacks %q:\n%s", want, system)
		}
	}
	if !first.HasTool("skills_list") || !first.HasTool("skills_load") {
		t.Errorf("tools offered: %v, want skills_list and skills_load", first.Tools)
	}

	writeSkillFile(t, filepath.Join(dir, ".claude", "skills", "later", "SKILL.md"), "---\ndescription: Added while running.\n---\n")
	p.mustExecute(t, "", "again")
	reqs := fake.Requests()
	if last := reqs[len(reqs)-1].Messages[0].Content; !strings.Contains(last, "- later: Added while running.") {
		t.Errorf("a skill added while ship runs is not listed:\n%s", last)
	}
}
