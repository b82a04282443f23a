package skills_test

import (
	"strings"
	"testing"
)

func TestLoadReadsTheOutputSchema(t *testing.T) {
	p := newProject(t)
	writeSkill(t, p.skills, "inline", "description: Inline.\noutputSchema:\n  type: object\n  required: [ok]", "Go.\n")
	writeSkill(t, p.skills, "file", "description: From a file.\noutputSchemaFile: out/schema.json", "Go.\n")
	writeFile(t, p.skills, "file/out/schema.json", `{"type":"array"}`)
	writeSkill(t, p.skills, "plain", "description: None.", "Go.\n")
	cat := p.catalog(t)
	for id, want := range map[string]string{"inline": `{"required":["ok"],"type":"object"}`, "file": `{"type":"array"}`, "plain": ""} {
		s, err := cat.Load(id)
		if err != nil || s.OutputSchema != want {
			t.Errorf("%s: schema %q, %v; want %q", id, s.OutputSchema, err, want)
		}
	}
}

func TestABadOutputSchemaSkipsTheSkill(t *testing.T) {
	p := newProject(t)
	writeSkill(t, p.skills, "bad", "description: Bad.\noutputSchema: [1]", "Go.\n")
	writeSkill(t, p.skills, "outside", "description: Outside.\noutputSchemaFile: ../other/schema.json", "Go.\n")
	writeSkill(t, p.skills, "missing", "description: Missing.\noutputSchemaFile: none.json", "Go.\n")
	cat := p.catalog(t)
	if got := ids(cat.List()); len(got) != 1 || got[0] != "missing" {
		t.Errorf("listed %v; want only the skill whose schema file is read at load", got)
	}
	for _, want := range []string{"outputSchema must be an object", "inside the skill's folder"} {
		if !strings.Contains(p.logs.String(), want) {
			t.Errorf("logs lack %q:\n%s", want, p.logs.String())
		}
	}
	if _, err := cat.Load("missing"); err == nil || !strings.Contains(err.Error(), "outputSchemaFile") {
		t.Errorf("loading a skill whose schema file is missing: %v", err)
	}
}
