package server

import (
	"errors"
	"net/http"
	"strings"

	"github.com/shipmyagent/ship/runtime/llm"
)

// ModelInfo is one configured model (GET /api/models). It never carries a
// key.
type ModelInfo struct {
	// Name is what /model and llmConfig.model take.
	Name     string `json:"name"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// Host is the base URL's host ("api.deepseek.com"); empty for the
	// provider's own endpoint.
	Host string `json:"host,omitempty"`
	// Default is set for the model chats use until they switch.
	Default bool `json:"default"`
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	cat := s.opts.View.Models()
	list := cat.List()
	out := make([]ModelInfo, 0, len(list))
	for _, m := range list {
		out = append(out, ModelInfo{Name: m.Name, Provider: m.Config.Provider, Model: m.Config.Model, Host: m.Config.Host(), Default: m.Default})
	}
	writeJSON(w, r, http.StatusOK, map[string]any{"models": out, "default": cat.Default().Name})
}

// llmConfig is the llmConfig of /api/send and /api/execute: a configured
// model (by name, or a provider and its model id) and call options for
// this request's run only.
type llmConfig struct {
	Provider    string   `json:"provider"`
	Model       string   `json:"model"`
	TopP        *float64 `json:"topP"`
	Temperature *float64 `json:"temperature"`
	MaxTokens   *int     `json:"maxTokens"`
}

// checkLLMConfig turns a request's llmConfig into the run's override;
// nil asks for nothing.
func (s *Server) checkLLMConfig(c *llmConfig) (llm.Override, *inputError) {
	var o llm.Override
	if c == nil {
		return o, nil
	}
	switch {
	case c.Model == "" && c.Provider != "":
		return o, invalid("llmConfig.model is required with llmConfig.provider (a model name from GET /api/models, or the provider's model id)")
	case c.Model != "":
		m, err := s.opts.View.Models().Find(c.Provider, c.Model)
		if err != nil {
			return o, invalid("llmConfig.model: %s (GET /api/models lists them)", err)
		}
		o.Model = m.Name
	}
	o.Temperature, o.TopP = c.Temperature, c.TopP
	if c.MaxTokens != nil {
		if *c.MaxTokens < 1 {
			return o, invalid("llmConfig.maxTokens must be between 1 and %d", llm.MaxMaxTokens)
		}
		o.MaxTokens = *c.MaxTokens
	}
	if err := llm.ValidateCallOptions(o.CallOptions); err != nil {
		msg := strings.TrimPrefix(err.Error(), llm.ErrBadCallOption.Error()+": ")
		if !errors.Is(err, llm.ErrBadCallOption) {
			msg = err.Error()
		}
		return o, invalid("llmConfig.%s", msg)
	}
	return o, nil
}
