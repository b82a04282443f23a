package config

import (
	"fmt"
	"strconv"
	"strings"
)

// applyLLMEnv lets the environment set the llm settings that are numbers
// or names of their own (the strings are in applyEnv).
func applyLLMEnv(cfg *Config, lookup LookupEnv) error {
	if v, ok := lookup("LLM_MAX_TOKENS"); ok && v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("%w: LLM_MAX_TOKENS=%q is not a whole number of tokens", ErrInvalid, v)
		}
		cfg.LLM.MaxTokens = n
	}
	if v, ok := lookup("LLM_MAX_TOKENS_FIELD"); ok && v != "" {
		cfg.LLM.MaxTokensField = v
	}
	t := &cfg.LLM.Timeouts
	for _, s := range []struct {
		env string
		dst *float64
	}{
		{"LLM_CONNECT_TIMEOUT", &t.ConnectSeconds},
		{"LLM_FIRST_BYTE_TIMEOUT", &t.FirstByteSeconds},
		{"LLM_IDLE_TIMEOUT", &t.IdleSeconds},
	} {
		v, ok := lookup(s.env)
		if !ok || v == "" {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return fmt.Errorf("%w: %s=%q is not a number of seconds", ErrInvalid, s.env, v)
		}
		*s.dst = f
	}
	return nil
}
