package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/runtime/llm"
)

func TestLLMTimeoutsAndMaxTokensFieldLoad(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, FileName, `{"llm": {
	  "provider": "openai", "apiKey": "k", "maxTokensField": "max_completion_tokens",
	  "timeouts": {"connectSeconds": 5, "firstByteSeconds": 60, "idleSeconds": 30},
	  "models": {"local": {"provider": "ollama", "baseUrl": "http://127.0.0.1:11434/v1", "timeouts": {"idleSeconds": 600}}}}}`)
	cfg, err := Load(dir, envOf(map[string]string{"LLM_FIRST_BYTE_TIMEOUT": "90.5"}))
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Timeouts{ConnectSeconds: 5, FirstByteSeconds: 90.5, IdleSeconds: 30}
	if cfg.LLM.Timeouts != want {
		t.Errorf("llm.timeouts = %+v, want %+v", cfg.LLM.Timeouts, want)
	}
	local := cfg.LLM.Entries()[1].Config
	if want.IdleSeconds = 600; local.Timeouts != want {
		t.Errorf("llm.models.local.timeouts = %+v, want %+v (the rest inherited)", local.Timeouts, want)
	}
	// A model of another service names the cap as its own server reads it.
	if local.SentMaxTokensField() != llm.MaxTokensLegacy {
		t.Errorf("local sends %s, want max_tokens (auto, not OpenAI)", local.SentMaxTokensField())
	}
	if def := cfg.LLM.Entries()[0].Config; def.SentMaxTokensField() != llm.MaxTokensCompletion {
		t.Errorf("the default sends %s, want max_completion_tokens as set", def.SentMaxTokensField())
	}
}

func TestBadLLMTimeoutsNameTheField(t *testing.T) {
	cases := []struct {
		body string
		env  map[string]string
		want string
	}{
		{`"timeouts": {"idleSeconds": -1}`, nil, "llm.timeouts.idleSeconds (LLM_IDLE_TIMEOUT) is -1"},
		{`"timeouts": {"connectSeconds": 99999}`, nil, "llm.timeouts.connectSeconds"},
		{`"models": {"slow": {"timeouts": {"firstByteSeconds": -2}}}`, nil, "llm.models.slow.timeouts.firstByteSeconds"},
		{`"maxTokensField": "tokens"`, nil, `llm.maxTokensField (LLM_MAX_TOKENS_FIELD) "tokens" must be`},
		{`"models": {"deep": {"maxTokensField": "both"}}`, nil, "llm.models.deep.maxTokensField"},
		{`"timeouts": {}`, map[string]string{"LLM_IDLE_TIMEOUT": "soon"}, `LLM_IDLE_TIMEOUT="soon" is not a number of seconds`},
		{`"timeouts": {}`, map[string]string{"LLM_MAX_TOKENS_FIELD": "x"}, `llm.maxTokensField (LLM_MAX_TOKENS_FIELD) "x"`},
	}
	for _, c := range cases {
		dir := t.TempDir()
		write(t, dir, FileName, `{"llm": {"provider": "openai", "apiKey": "k", `+c.body+"}}")
		_, err := Load(dir, envOf(c.env))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: err = %v, want it to say %q", c.body, c.env, err, c.want)
		}
	}
}
