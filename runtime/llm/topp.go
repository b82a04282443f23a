package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// langchaingo v0.1.14's OpenAI client gets two things of the request body
// wrong for ship: it reads llms.WithTopP but never puts it in the request
// (its ChatRequest has a top_p field that GenerateContent leaves empty),
// and it always names the answer cap max_completion_tokens, which several
// OpenAI-compatible servers (DeepSeek and others) do not read, so their
// answers go uncapped. withTopP carries top_p in the call's context, and
// bodyDoer, the client's HTTP doer, writes both into the body in one go.

// withTopP is an OpenAI model whose calls honour llms.WithTopP.
type withTopP struct{ llms.Model }

func (m withTopP) GenerateContent(ctx context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	var o llms.CallOptions
	for _, opt := range options {
		opt(&o)
	}
	if o.TopP > 0 {
		ctx = withCall(ctx, func(c *call) { c.topP = o.TopP })
	}
	return m.Model.GenerateContent(ctx, msgs, options...)
}

// Values of Config.MaxTokensField.
const (
	// MaxTokensAuto sends max_completion_tokens to OpenAI itself
	// (api.openai.com, or no base URL) and max_tokens to any other server.
	MaxTokensAuto = "auto"
	// MaxTokensLegacy always sends max_tokens.
	MaxTokensLegacy = "max_tokens"
	// MaxTokensCompletion always sends max_completion_tokens.
	MaxTokensCompletion = "max_completion_tokens"
)

// SentMaxTokensField is the name of the field that carries the answer cap
// in c's OpenAI requests: MaxTokensLegacy or MaxTokensCompletion.
func (c Config) SentMaxTokensField() string {
	switch strings.ToLower(strings.TrimSpace(c.MaxTokensField)) {
	case MaxTokensLegacy:
		return MaxTokensLegacy
	case MaxTokensCompletion:
		return MaxTokensCompletion
	}
	if c.BaseURL == "" {
		return MaxTokensCompletion
	}
	if u, err := url.Parse(c.BaseURL); err == nil && strings.EqualFold(u.Hostname(), "api.openai.com") {
		return MaxTokensCompletion
	}
	return MaxTokensLegacy
}

// ErrBadMaxTokensField is wrapped by ValidateTransport.
var ErrBadMaxTokensField = errors.New("invalid maxTokensField")

// ValidateTransport checks how c reaches its server: its timeouts and
// maxTokensField, each named as in ship.json under where ("llm", or
// "llm.models.NAME"). Unset values are valid: they take defaults.
func (c Config) ValidateTransport(where string) error {
	if err := c.Timeouts.Validate(where + ".timeouts"); err != nil {
		return err
	}
	switch strings.ToLower(strings.TrimSpace(c.MaxTokensField)) {
	case "", MaxTokensAuto, MaxTokensLegacy, MaxTokensCompletion:
		return nil
	}
	name := where + ".maxTokensField"
	if where == "llm" { // the environment sets only the default model's
		name += " (LLM_MAX_TOKENS_FIELD)"
	}
	return fmt.Errorf("%w: %s %q must be %q, %q or %q",
		ErrBadMaxTokensField, name, c.MaxTokensField, MaxTokensAuto, MaxTokensLegacy, MaxTokensCompletion)
}

// bodyDoer sends requests through c, adding "top_p" to the JSON body of a
// request whose context carries one and, when legacyMaxTokens is set,
// renaming max_completion_tokens to max_tokens.
type bodyDoer struct {
	c               *http.Client
	legacyMaxTokens bool
}

func (d bodyDoer) Do(req *http.Request) (*http.Response, error) {
	p := callFrom(req.Context()).topP
	hasTopP := p > 0
	if (!hasTopP && !d.legacyMaxTokens) || req.Body == nil {
		return d.c.Do(req)
	}
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("reading the model request: %w", err)
	}
	body, err = d.rewrite(body, p, hasTopP)
	if err != nil {
		return nil, err
	}
	req = req.Clone(req.Context())
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	req.ContentLength = int64(len(body))
	return d.c.Do(req)
}

// rewrite returns body with top_p set (when hasTopP) and the answer cap
// under the name the server reads. Only top-level keys are touched: a
// tool's schema may well have a property of the same name.
func (d bodyDoer) rewrite(body []byte, topP float64, hasTopP bool) ([]byte, error) {
	// Spliced, not decoded and encoded again: the body carries the tool
	// schemas and the whole history, and re-encoding it on every call
	// cost a tenth of a turn's CPU.
	if len(body) < 2 || body[0] != '{' {
		return body, nil // not a JSON object: not a chat request
	}
	if d.legacyMaxTokens {
		if i := topLevelKey(body, MaxTokensCompletion); i >= 0 {
			renamed := make([]byte, 0, len(body))
			renamed = append(renamed, body[:i]...)
			renamed = append(renamed, `"`+MaxTokensLegacy+`"`...)
			body = append(renamed, body[i+len(MaxTokensCompletion)+2:]...)
		}
	}
	if hasTopP && topLevelKey(body, "top_p") < 0 {
		// langchaingo never writes top_p (see above), so adding it after
		// the opening brace cannot make a duplicate key.
		field := `{"top_p":` + strconv.FormatFloat(topP, 'g', -1, 64)
		if len(bytes.TrimSpace(body[1:])) > 1 { // not "{}"
			field += ","
		}
		body = append([]byte(field), body[1:]...)
	}
	return body, nil
}

// topLevelKey returns where the key name (its opening quote) stands in
// the JSON object body, at the top level only; -1 when it is not there.
// A key of a nested object (a tool schema's property) and a string value
// that reads like it do not count.
func topLevelKey(body []byte, name string) int {
	depth, start := 0, -1
	inString, escaped := false, false
	for i := 0; i < len(body); i++ {
		c := body[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
				if depth == 1 && string(body[start+1:i]) == name && isKey(body[i+1:]) {
					return start
				}
			}
			continue
		}
		switch c {
		case '"':
			inString, start = true, i
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		}
	}
	return -1
}

// isKey reports whether rest, what follows a string, starts with a colon
// (the string was a key).
func isKey(rest []byte) bool {
	rest = bytes.TrimLeft(rest, " \t\r\n")
	return len(rest) > 0 && rest[0] == ':'
}
