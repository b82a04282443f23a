package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAgentProfilesAreRead(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "agents"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "agents/coder.md", "You write Go.\n")
	write(t, dir, FileName, `{"llm": {"models": {"big": {"provider": "offline", "model": "gpt-big"}}},
	  "agents": {"coder": {"prompt": "agents/coder.md", "model": "big",
	    "tools": {"deny": ["exec_shell"]}, "chats": ["telegram:chat:-100*"]}}}`)
	cfg, err := Load(dir, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	set, err := cfg.Profiles()
	if err != nil {
		t.Fatal(err)
	}
	d := set.Route("telegram:chat:-1005", "hello")
	if d.Profile.Name != "coder" || d.Reason != "bound:telegram:chat:-100*" {
		t.Fatalf("decision %+v", d)
	}
	if d.Profile.Prompt != "You write Go." || d.Profile.Model != "big" || len(d.Profile.Tools.Deny) != 1 {
		t.Errorf("profile %+v", d.Profile)
	}
}

func TestBadAgentProfilesAreRefused(t *testing.T) {
	for name, tc := range map[string]struct{ agents, want string }{
		"unknown model":   {`{"coder": {"model": "huge"}}`, `agents.coder.model: no model "huge" in llm.models (have default, big)`},
		"missing prompt":  {`{"coder": {"prompt": "agents/none.md"}}`, "agents.coder.prompt: reading the prompt file"},
		"prompt outside":  {`{"coder": {"prompt": "../x.md"}}`, "name a file inside the project folder"},
		"bad glob":        {`{"coder": {"chats": ["telegram:chat:[12]"]}}`, "only * and ? are wildcards"},
		"empty glob":      {`{"coder": {"chats": [""]}}`, "empty or surrounded by blanks"},
		"glob twice":      {`{"a": {"chats": ["qq:*"]}, "b": {"chats": ["qq:*"]}}`, `"qq:*" is already bound to agent "a"`},
		"widening tools":  {`{"coder": {"tools": {"allow": ["exec_shell"]}}}`, "may only narrow"},
		"bad rule":        {`{"coder": {"tools": {"deny": ["exec shell("]}}}`, "agents.coder.tools"},
		"name with blank": {`{"my coder": {}}`, "only letters, digits"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, FileName, `{"llm": {"models": {"big": {"provider": "offline", "model": "gpt-big"}}}, "agents": `+tc.agents+`}`)
			_, err := Load(dir, envOf(nil))
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestNoAgentsIsTodaysBehaviour(t *testing.T) {
	cfg, err := Load(t.TempDir(), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	set, err := cfg.Profiles()
	if err != nil {
		t.Fatal(err)
	}
	d := set.Route("telegram:chat:1", "/agent coder hi")
	if d.Profile.Name != "default" || d.Reason != "default" || d.Text != "/agent coder hi" || d.Profile.Prompt != "" || d.Profile.Model != "" {
		t.Errorf("decision %+v", d)
	}
}
