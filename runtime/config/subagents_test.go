package config

import (
	"errors"
	"strings"
	"testing"
)

func TestSubAgentsSection(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, FileName, `{"tools": {"agents": {"maxDepth": 1, "maxPerRun": 2}, "allow": ["agent_spawn"]}}`)
	cfg, err := Load(dir, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.Tools.Agents; a.MaxDepth != 1 || a.MaxPerRun != 2 || a.Off {
		t.Errorf("tools.agents = %+v", a)
	}
	if strings.Contains(string(cfg.Tools.Policy), "maxDepth") || !strings.Contains(string(cfg.Tools.Policy), "agent_spawn") {
		t.Errorf("the policy got tools.agents or lost its rules: %s", cfg.Tools.Policy)
	}
	write(t, dir, FileName, `{"tools": {"agents": {"maxDepth": 50}}}`)
	if _, err := Load(dir, envOf(nil)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "tools.agents.maxDepth") {
		t.Errorf("a depth of 50: %v", err)
	}
	write(t, dir, FileName, `{"tools": {"agents": {"depth": 1}}}`)
	if _, err := Load(dir, envOf(nil)); err == nil || !strings.Contains(err.Error(), "tools.agents") {
		t.Errorf("an unknown field: %v", err)
	}
}

func TestSubAgentBudgets(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, FileName, `{"tools": {"agents": {"maxSteps": 5, "maxTokens": 9000}}}`)
	cfg, err := Load(dir, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.Tools.Agents; a.MaxSteps != 5 || a.MaxTokens != 9000 {
		t.Errorf("tools.agents = %+v", a)
	}
	for field, body := range map[string]string{
		"tools.agents.maxSteps":  `{"tools": {"agents": {"maxSteps": 1000}}}`,
		"tools.agents.maxTokens": `{"tools": {"agents": {"maxTokens": -1}}}`,
	} {
		write(t, dir, FileName, body)
		if _, err := Load(dir, envOf(nil)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v, want an error naming %s", body, err, field)
		}
	}
}
