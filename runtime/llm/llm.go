// Package llm builds the model ship talks to from configuration: OpenAI and
// any OpenAI-compatible endpoint (DeepSeek, Qwen, Moonshot, Ollama, vLLM),
// Anthropic, and the built-in offline model.
package llm

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/shipmyagent/ship/internal/netguard"
)

// Provider names.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
	ProviderOffline   = "offline"
)

// Config selects and reaches a model.
type Config struct {
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	BaseURL  string `json:"baseUrl,omitempty"` // OpenAI-style base that already ends in /v1
	APIKey   string `json:"apiKey,omitempty"`
	// Timeouts bound the waits on the model's server; an entry of Models
	// takes each unset one from here.
	Timeouts Timeouts `json:"timeouts,omitempty"`
	// MaxTokensField names the request field that carries the answer cap
	// (MaxTokensAuto, MaxTokensLegacy or MaxTokensCompletion); see
	// SentMaxTokensField.
	MaxTokensField string `json:"maxTokensField,omitempty"`

	// MaxTokens caps the length of each model answer, in tokens; the
	// runtime sends it with every call (agent.Options.MaxTokens). 0 →
	// DefaultMaxTokens.
	MaxTokens int `json:"maxTokens,omitempty"`

	// Models are more models, by name, that a chat may switch to (/model
	// NAME) or an API request may name (llmConfig.model). This config
	// itself is the model every chat starts with, named DefaultName. An
	// entry without a provider takes provider, baseUrl and apiKey from
	// here; see Entries.
	Models map[string]Config `json:"models,omitempty"`
	// Switch says who may switch a chat's model with /model: "private"
	// (default), "approvers", "anyone" or "off" (see package models).
	Switch string `json:"switch,omitempty"`
	// Vision says whether the model is shown the images people send
	// ("auto" by model name, true, false); see VisionCapable.
	Vision Vision `json:"vision,omitempty"`
}

// Answer length bounds. Without a max_tokens of its own langchaingo asks
// Anthropic for at most 2,048 tokens, which cuts long answers short.
const (
	DefaultMaxTokens = 8192
	MaxMaxTokens     = 128_000
)

// Default model names when none is configured.
const (
	DefaultOpenAIModel    = "gpt-4o-mini"
	DefaultAnthropicModel = "claude-sonnet-4-5"
)

// Errors of Validate and New. Callers branch on them to print how to fix
// the configuration.
var (
	ErrNoProvider      = errors.New("no model provider configured")
	ErrUnknownProvider = errors.New("unknown model provider")
	ErrMissingAPIKey   = errors.New("missing API key")
	ErrBadBaseURL      = errors.New("invalid base URL")
)

// Normalized returns c with its provider lower-cased and defaults filled in.
// Names of OpenAI-compatible services are taken as "openai".
func (c Config) Normalized() Config {
	p := strings.ToLower(strings.TrimSpace(c.Provider))
	switch p {
	case "openai-compatible", "deepseek", "qwen", "dashscope", "moonshot", "kimi", "ollama", "vllm", "openrouter":
		p = ProviderOpenAI
	case "claude":
		p = ProviderAnthropic
	}
	c.Provider = p
	if c.Model == "" {
		switch p {
		case ProviderOpenAI:
			c.Model = DefaultOpenAIModel
		case ProviderAnthropic:
			c.Model = DefaultAnthropicModel
		case ProviderOffline:
			c.Model = "offline"
		}
	}
	c.BaseURL = strings.TrimRight(strings.TrimSpace(c.BaseURL), "/")
	c.MaxTokensField = strings.ToLower(strings.TrimSpace(c.MaxTokensField))
	if c.MaxTokensField == "" {
		c.MaxTokensField = MaxTokensAuto
	}
	if c.MaxTokens == 0 {
		c.MaxTokens = DefaultMaxTokens
	}
	return c
}

// Validate reports what is missing, naming the variable that fixes it. It
// never includes the key itself.
func (c Config) Validate() error {
	c = c.Normalized()
	switch c.Provider {
	case "":
		return fmt.Errorf("%w: set LLM_PROVIDER (openai, anthropic or offline) and LLM_API_KEY, or pass --offline", ErrNoProvider)
	case ProviderOffline:
		return nil
	case ProviderOpenAI, ProviderAnthropic:
	default:
		return fmt.Errorf("%w %q: LLM_PROVIDER must be openai, anthropic or offline", ErrUnknownProvider, c.Provider)
	}
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%w %q: LLM_BASE_URL must be an http(s) URL such as https://api.deepseek.com/v1", ErrBadBaseURL, redactURL(c.BaseURL))
		}
	}
	if c.APIKey == "" && !isLoopback(c.BaseURL) {
		return fmt.Errorf("%w for provider %s: set LLM_API_KEY (or llm.apiKey in ship.json), or pass --offline", ErrMissingAPIKey, c.Provider)
	}
	return nil
}

// New returns the model c describes.
func New(c Config) (llms.Model, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c = c.Normalized()
	client := httpClient(c.Timeouts)
	switch c.Provider {
	case ProviderOffline:
		return NewOffline(), nil
	case ProviderAnthropic:
		opts := []anthropic.Option{anthropic.WithToken(c.APIKey), anthropic.WithModel(c.Model), anthropic.WithHTTPClient(sseDoer{client})}
		if c.BaseURL != "" {
			opts = append(opts, anthropic.WithBaseURL(c.BaseURL))
		}
		m, err := anthropic.New(opts...)
		if err != nil {
			return nil, fmt.Errorf("creating anthropic client: %w", err)
		}
		return &oneCallPerMessage{Model: m}, nil
	default:
		key := c.APIKey
		if key == "" {
			// Local servers (Ollama, vLLM) take no key, but the client
			// insists on one.
			key = "unused"
		}
		opts := []openai.Option{openai.WithToken(key), openai.WithModel(c.Model)}
		if c.BaseURL != "" {
			opts = append(opts, openai.WithBaseURL(c.BaseURL))
		}
		// langchaingo's OpenAI client drops top_p and always names the
		// answer cap max_completion_tokens: bodyDoer puts both right.
		doer := bodyDoer{c: client, legacyMaxTokens: c.SentMaxTokensField() == MaxTokensLegacy}
		opts = append(opts, openai.WithHTTPClient(doer))
		m, err := openai.New(opts...)
		if err != nil {
			return nil, fmt.Errorf("creating openai client: %w", err)
		}
		return withTopP{m}, nil
	}
}

// isLoopback reports whether a base URL names this machine (see
// netguard.LoopbackHost).
func isLoopback(base string) bool {
	u, err := url.Parse(base)
	return err == nil && u.Host != "" && netguard.LoopbackHost(u.Host)
}

// redactURL drops credentials a base URL might carry.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparseable)"
	}
	u.User = nil
	u.RawQuery = ""
	return u.String()
}
