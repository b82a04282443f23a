package config

import (
	"fmt"

	"github.com/shipmyagent/ship/runtime/models"
)

// validateModels checks llm.models, llm.switch, and how the default model
// is reached (llm.timeouts, llm.maxTokensField).
func (c *Config) validateModels() error {
	if err := c.LLM.ValidateTransport("llm"); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := c.LLM.ValidateModels(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if _, err := models.ParseSwitch(c.LLM.Switch); err != nil {
		return fmt.Errorf("%w: llm.switch %w", ErrInvalid, err)
	}
	return nil
}

// modelKeys are the API keys of llm.models: secrets like LLM_API_KEY.
func (c Config) modelKeys() []string {
	var out []string
	for _, m := range c.LLM.Models {
		out = append(out, m.APIKey)
	}
	return out
}
