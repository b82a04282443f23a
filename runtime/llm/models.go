package llm

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// DefaultName names the model every chat starts with: the top-level llm
// settings (LLM_PROVIDER, LLM_MODEL, ...).
const DefaultName = "default"

// ErrBadModelEntry is wrapped by ValidateModels.
var ErrBadModelEntry = errors.New("invalid model entry")

// modelName is what a model may be called: short, and typed after /model
// in a chat.
var modelName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$`)

// ValidName reports whether s may name a model.
func ValidName(s string) bool { return modelName.MatchString(s) }

// Named is one configured model.
type Named struct {
	Name   string
	Config Config // normalized, Models empty
	// Default is set for the model chats start with.
	Default bool
}

// Entries lists the models c configures: itself first (DefaultName, the
// default), then each of c.Models by name. An entry without a provider
// takes provider, baseUrl, apiKey and maxTokensField from c (another model
// of the same service); one with a provider stands alone. Either way an
// entry without maxTokens takes c's, and each timeout it leaves unset. Every Config is normalized.
func (c Config) Entries() []Named {
	def := c
	def.Models, def.Switch = nil, ""
	def = def.Normalized()
	out := []Named{{Name: DefaultName, Config: def, Default: true}}
	names := make([]string, 0, len(c.Models))
	for n := range c.Models {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		out = append(out, Named{Name: n, Config: c.entry(c.Models[n])})
	}
	return out
}

func (c Config) entry(e Config) Config {
	e.Models, e.Switch = nil, ""
	if e.Provider == "" {
		e.Provider, e.BaseURL = c.Provider, c.BaseURL
		if e.APIKey == "" {
			e.APIKey = c.APIKey
		}
		if e.MaxTokensField == "" {
			e.MaxTokensField = c.MaxTokensField
		}
	}
	if e.MaxTokens == 0 {
		e.MaxTokens = c.MaxTokens
	}
	e.Timeouts = e.Timeouts.or(c.Timeouts)
	return e.Normalized()
}

// ValidateModels checks c.Models, each problem named by its place in
// ship.json ("llm.models.fast.apiKey ..."). Keys never appear in an error.
func (c Config) ValidateModels() error {
	for _, n := range c.Entries()[1:] {
		where := "llm.models." + n.Name
		raw := c.Models[n.Name]
		switch {
		case n.Name == DefaultName:
			return fmt.Errorf("%w: llm.models.%s: the name %q is taken by the top-level llm settings; pick another", ErrBadModelEntry, n.Name, DefaultName)
		case !ValidName(n.Name):
			return fmt.Errorf("%w: llm.models: name %q must be 1 to 32 letters, digits, '.', '_' or '-', starting with a letter or digit", ErrBadModelEntry, n.Name)
		case len(raw.Models) > 0:
			return fmt.Errorf("%w: %s.models: only the top-level llm lists models", ErrBadModelEntry, where)
		case raw.Switch != "":
			return fmt.Errorf("%w: %s.switch: set who may switch once, as llm.switch", ErrBadModelEntry, where)
		}
		e := n.Config
		switch e.Provider {
		case ProviderOpenAI, ProviderAnthropic, ProviderOffline:
		case "":
			return fmt.Errorf("%w: %s.provider is empty and the top-level llm has none to lend it: set provider (openai, anthropic or offline)", ErrBadModelEntry, where)
		default:
			return fmt.Errorf("%w: %s.provider %q must be openai, anthropic or offline", ErrBadModelEntry, where, raw.Provider)
		}
		if err := raw.ValidateTransport(where); err != nil {
			return fmt.Errorf("%w: %w", ErrBadModelEntry, err)
		}
		if e.Provider == ProviderOffline {
			continue
		}
		if e.BaseURL != "" {
			u, err := url.Parse(e.BaseURL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fmt.Errorf("%w: %s.baseUrl %q must be an http(s) URL such as https://api.deepseek.com/v1", ErrBadModelEntry, where, redactURL(e.BaseURL))
			}
		}
		if e.APIKey == "" && !isLoopback(e.BaseURL) {
			env := strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(n.Name)) + "_API_KEY"
			return fmt.Errorf("%w: %s.apiKey is empty: set it, e.g. \"apiKey\": \"${%s}\" with %s set in the environment or .env", ErrBadModelEntry, where, env, env)
		}
		if e.MaxTokens < 1 || e.MaxTokens > MaxMaxTokens {
			return fmt.Errorf("%w: %s.maxTokens is %d; it must be between 1 and %d", ErrBadModelEntry, where, e.MaxTokens, MaxMaxTokens)
		}
	}
	return nil
}

// Host is the host of c's base URL ("api.deepseek.com"), or "" for the
// provider's own endpoint.
func (c Config) Host() string {
	if c.BaseURL == "" {
		return ""
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil {
		return ""
	}
	return u.Host
}
