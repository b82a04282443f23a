package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/shipmyagent/ship/runtime/policy"
	"github.com/shipmyagent/ship/runtime/profiles"
)

// AgentConfig is one agents.<name> entry of ship.json: an agent profile.
type AgentConfig struct {
	// Prompt is a file in the project (like "agents/coder.md") whose text
	// replaces Agent.md for this profile's runs.
	Prompt string `json:"prompt,omitempty"`
	// Model is a name of llm.models ("default" for llm itself).
	Model string `json:"model,omitempty"`
	// Tools narrows the tool policy for this profile's runs:
	// {"deny": [...], "requireApproval": [...]}, rules as in tools.deny.
	Tools json.RawMessage `json:"tools,omitempty"`
	// Chats are chat-key globs bound to this profile
	// ("telegram:chat:-100*").
	Chats []string `json:"chats,omitempty"`
}

// Profiles reads the agents section into profiles, prompt files
// included: a missing prompt file, an unknown model, a bad rule or glob is
// an error that names the entry.
func (c Config) Profiles() (*profiles.Set, error) {
	names := make([]string, 0, len(c.Agents))
	for n := range c.Agents {
		names = append(names, n)
	}
	slices.Sort(names)
	models := map[string]bool{}
	var known []string
	for _, m := range c.LLM.Entries() {
		models[m.Name] = true
		known = append(known, m.Name)
	}
	var ps []profiles.Profile
	for _, n := range names {
		a := c.Agents[n]
		where := "agents." + n
		if err := profiles.CheckName(n); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		p := profiles.Profile{Name: n, Model: a.Model, Chats: a.Chats}
		if a.Model != "" && !models[a.Model] {
			return nil, fmt.Errorf("%w: %s.model: no model %q in llm.models (have %s)", ErrInvalid, where, a.Model, strings.Join(known, ", "))
		}
		if a.Prompt != "" {
			text, err := c.readAgentPrompt(where, a.Prompt)
			if err != nil {
				return nil, err
			}
			p.Prompt = text
		}
		if len(a.Tools) > 0 {
			nar, err := policy.ParseNarrowing(a.Tools)
			if err != nil {
				return nil, fmt.Errorf("%w: %s.tools: %w", ErrInvalid, where, err)
			}
			p.Tools = nar
		}
		ps = append(ps, p)
	}
	set, err := profiles.New(ps)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return set, nil
}

// readAgentPrompt reads a profile's prompt file, which must lie inside
// the project folder.
func (c Config) readAgentPrompt(where, rel string) (string, error) {
	if filepath.IsAbs(rel) || !filepath.IsLocal(filepath.FromSlash(rel)) {
		return "", fmt.Errorf("%w: %s.prompt %q: name a file inside the project folder, like \"agents/coder.md\"", ErrInvalid, where, rel)
	}
	b, err := os.ReadFile(filepath.Join(c.Dir, filepath.FromSlash(rel)))
	if err != nil {
		return "", fmt.Errorf("%w: %s.prompt: reading the prompt file: %w", ErrInvalid, where, err)
	}
	text := strings.TrimSpace(string(b))
	if text == "" {
		return "", fmt.Errorf("%w: %s.prompt: %s is empty", ErrInvalid, where, rel)
	}
	return text, nil
}
