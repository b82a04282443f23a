package llm

import (
	"errors"
	"fmt"

	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/runtime/turn"
)

// Sampling bounds of CallOptions (OpenAI's; Anthropic takes temperatures
// up to 1 and answers a higher one with an error of its own).
const (
	MaxTemperature = 2.0
)

// ErrBadCallOption is wrapped by CallOptions.Validate.
var ErrBadCallOption = errors.New("invalid model option")

// CallOptions tune the model calls of one run (turn.CallOptions). A zero
// field leaves the model's own setting: no temperature sends langchaingo's
// default (0), no topP sends none, no maxTokens sends the configured
// maxTokens.
type CallOptions = turn.CallOptions

// Override is what one request asks of the model for its own run (the HTTP
// API's llmConfig; turn.Model): a configured model by name ("" keeps the
// chat's) and call options. It travels with the turn, so a run resumed
// after a crash uses the same.
type Override = turn.Model

// ValidateCallOptions reports the first option of o out of range, naming
// its field.
func ValidateCallOptions(o CallOptions) error {
	if t := o.Temperature; t != nil && (*t < 0 || *t > MaxTemperature) {
		return fmt.Errorf("%w: temperature %g must be between 0 and %g", ErrBadCallOption, *t, MaxTemperature)
	}
	if p := o.TopP; p != nil && (*p <= 0 || *p > 1) {
		return fmt.Errorf("%w: topP %g must be above 0 and at most 1", ErrBadCallOption, *p)
	}
	if o.MaxTokens < 0 || o.MaxTokens > MaxMaxTokens {
		return fmt.Errorf("%w: maxTokens %d must be between 1 and %d", ErrBadCallOption, o.MaxTokens, MaxMaxTokens)
	}
	return nil
}

// CallOptionsOf returns the langchaingo call options o sets; maxTokens is
// the cap to send when o has none.
func CallOptionsOf(o CallOptions, maxTokens int) []llms.CallOption {
	if o.MaxTokens > 0 {
		maxTokens = o.MaxTokens
	}
	opts := []llms.CallOption{llms.WithMaxTokens(maxTokens)}
	if o.Temperature != nil {
		opts = append(opts, llms.WithTemperature(*o.Temperature))
	}
	if o.TopP != nil {
		opts = append(opts, llms.WithTopP(*o.TopP))
	}
	return opts
}
