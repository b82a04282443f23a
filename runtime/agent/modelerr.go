package agent

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"
)

// Providers report a too-long prompt in their own words; these cover OpenAI
// and the compatible servers (vLLM, Ollama, DeepSeek, Qwen, Moonshot) and
// Anthropic.
var contextLengthPhrases = []string{
	"context_length_exceeded",
	"maximum context length",
	"context length",
	"context window",
	"prompt is too long",
	"too many tokens",
	"reduce the length",
}

func isContextLengthError(err error) bool {
	var le *llms.Error
	if errors.As(err, &le) && le.Code == llms.ErrCodeTokenLimit {
		return true
	}
	msg := strings.ToLower(err.Error())
	for _, p := range contextLengthPhrases {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// langchaingo's OpenAI client returns non-200 answers as plain errors that
// name the status code.
var statusRE = regexp.MustCompile(`status code: (\d{3})`)

func isTransientError(err error) bool {
	var le *llms.Error
	if errors.As(err, &le) {
		switch le.Code {
		case llms.ErrCodeRateLimit, llms.ErrCodeProviderUnavailable, llms.ErrCodeTimeout:
			return true
		}
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	if m := statusRE.FindStringSubmatch(err.Error()); m != nil {
		code, _ := strconv.Atoi(m[1])
		return code == 408 || code == 409 || code == 429 || code >= 500
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "connection reset") || strings.Contains(msg, "connection refused") ||
		strings.Contains(msg, "eof") || strings.Contains(msg, "timeout")
}

// backoff is base·2^attempt with ±25 % jitter, so many chats retrying after
// one provider hiccup do not hit it again in lockstep.
func backoff(base time.Duration, attempt int) time.Duration {
	d := base << attempt
	jitter := time.Duration(rand.Int64N(int64(d)/2+1)) - d/4
	return d + jitter
}

// isToolCallDelta tells streamed tool-call fragments from model text: the
// langchaingo OpenAI client passes both to the streaming callback, the
// former as the JSON of the delta array (a langchaingo v0.1.14 quirk).
func isToolCallDelta(chunk []byte) bool {
	if len(chunk) < 2 || chunk[0] != '[' || chunk[1] != '{' {
		return false
	}
	var deltas []map[string]json.RawMessage
	if err := json.Unmarshal(chunk, &deltas); err != nil || len(deltas) == 0 {
		return false
	}
	for _, d := range deltas {
		if _, ok := d["function"]; !ok {
			return false
		}
	}
	return true
}

// toolCallStream follows the tool calls of one streamed model answer. The
// OpenAI client hands over each delta array as JSON; a delta with a
// function name starts a new call, the others continue the last one (which
// is also how langchaingo itself assembles them).
type toolCallStream struct {
	n    int
	name string
}

type toolCallDelta struct {
	index int
	name  string
	args  string
}

func (s *toolCallStream) feed(chunk []byte) []toolCallDelta {
	var deltas []struct {
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	if err := json.Unmarshal(chunk, &deltas); err != nil {
		return nil
	}
	var out []toolCallDelta
	for _, d := range deltas {
		if d.Function.Name != "" {
			s.n++
			s.name = d.Function.Name
		}
		if s.n == 0 || d.Function.Arguments == "" {
			continue
		}
		out = append(out, toolCallDelta{index: s.n - 1, name: s.name, args: d.Function.Arguments})
	}
	return out
}
