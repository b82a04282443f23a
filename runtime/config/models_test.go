package config

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/runtime/llm"
)

func TestModelsLoadWithKeysFromTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, FileName, `{"llm": {
	  "provider": "openai", "model": "gpt-4o", "apiKey": "${OPENAI_KEY}", "switch": "approvers",
	  "models": {
	    "fast":   {"model": "gpt-4o-mini"},
	    "deep":   {"provider": "deepseek", "model": "deepseek-chat", "baseUrl": "https://api.deepseek.com/v1", "apiKey": "${DEEPSEEK_KEY}", "maxTokens": 4000},
	    "claude": {"provider": "anthropic", "apiKey": "${ANTHROPIC_KEY}"},
	    "local":  {"provider": "ollama", "model": "qwen2.5", "baseUrl": "http://127.0.0.1:11434/v1"},
	    "canned": {"provider": "offline"}
	  }}}`)
	cfg, err := Load(dir, envOf(map[string]string{"OPENAI_KEY": "sk-openai-secret", "DEEPSEEK_KEY": "sk-deepseek-secret", "ANTHROPIC_KEY": "sk-ant-secret"}))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]llm.Config{}
	var names []string
	for _, n := range cfg.LLM.Entries() {
		got[n.Name] = n.Config
		names = append(names, n.Name)
	}
	if want := []string{"default", "canned", "claude", "deep", "fast", "local"}; !slices.Equal(names, want) {
		t.Errorf("names = %v, want %v", names, want)
	}
	if f := got["fast"]; f.Provider != "openai" || f.Model != "gpt-4o-mini" || f.APIKey != "sk-openai-secret" || f.MaxTokens != llm.DefaultMaxTokens {
		t.Errorf("fast (inherits the default's provider and key) = %+v", f)
	}
	if d := got["deep"]; d.Provider != "openai" || d.APIKey != "sk-deepseek-secret" || d.Host() != "api.deepseek.com" || d.MaxTokens != 4000 {
		t.Errorf("deep = %+v", d)
	}
	if c := got["claude"]; c.Provider != "anthropic" || c.Model != llm.DefaultAnthropicModel || c.APIKey != "sk-ant-secret" || c.BaseURL != "" {
		t.Errorf("claude (its own provider: inherits nothing but limits) = %+v", c)
	}
	if cfg.LLM.Switch != "approvers" {
		t.Errorf("switch = %q", cfg.LLM.Switch)
	}
	secrets := cfg.Secrets()
	for _, k := range []string{"sk-openai-secret", "sk-deepseek-secret", "sk-ant-secret"} {
		if !slices.Contains(secrets, k) {
			t.Errorf("Secrets() lacks a model key: %d secrets", len(secrets))
		}
	}
}

func TestBadModelEntriesNameTheField(t *testing.T) {
	for body, want := range map[string]string{
		`{"models": {"fast": {"provider": "gemini", "apiKey": "k"}}}`:                       `llm.models.fast.provider "gemini" must be openai, anthropic or offline`,
		`{"models": {"fast": {"provider": "openai"}}}`:                                      "llm.models.fast.apiKey is empty",
		`{"models": {"fast": {"provider": "openai", "apiKey": "${UNSET_KEY}"}}}`:            "llm.models.fast.apiKey is empty",
		`{"models": {"fast": {"provider": "openai", "apiKey": "k", "baseUrl": "ftp://x"}}}`: "llm.models.fast.baseUrl",
		`{"models": {"fast": {"maxTokens": 999999999}}}`:                                    "llm.models.fast.maxTokens",
		`{"models": {"default": {"model": "x"}}}`:                                           `llm.models.default: the name "default" is taken`,
		`{"models": {"two words": {"model": "x"}}}`:                                         `llm.models: name "two words"`,
		`{"models": {"fast": {"models": {"x": {}}}}}`:                                       "llm.models.fast.models",
		`{"models": {"fast": {"switch": "anyone"}}}`:                                        "llm.models.fast.switch",
		`{"models": {"fast": {"modle": "x"}}}`:                                              `unknown field "modle"`,
		`{"switch": "everyone"}`:                                                            `llm.switch "everyone" must be`,
	} {
		dir := t.TempDir()
		write(t, dir, FileName, `{"llm": {"provider": "openai", "apiKey": "sk-top-secret", "model": "gpt-4o", `+strings.TrimPrefix(body, "{")+"}")
		_, err := Load(dir, envOf(nil))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to say %q", body, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "sk-top-secret") {
			t.Errorf("%s: the error shows a key: %v", body, err)
		}
	}
}
