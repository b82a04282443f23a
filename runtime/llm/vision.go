package llm

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// Vision says whether the model is shown images: "auto" (by its name, see
// VisionCapable), "true" or "false". ship.json may write it as a string or
// a boolean.
type Vision string

// Vision settings.
const (
	VisionAuto Vision = "auto"
	VisionOn   Vision = "true"
	VisionOff  Vision = "false"
)

// UnmarshalJSON takes "auto", "true", "false", true or false.
func (v *Vision) UnmarshalJSON(b []byte) error {
	var on bool
	if err := json.Unmarshal(b, &on); err == nil {
		*v = VisionOff
		if on {
			*v = VisionOn
		}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("llm.vision must be \"auto\", true or false")
	}
	*v = Vision(strings.ToLower(strings.TrimSpace(s)))
	return nil
}

// Valid reports whether v is one of the settings ("" is auto).
func (v Vision) Valid() bool {
	switch v {
	case "", VisionAuto, VisionOn, VisionOff:
		return true
	}
	return false
}

// visionModels are name fragments of models that take images, matched
// case-insensitively anywhere in the model name (so "openai/gpt-4o" and
// "qwen2.5-vl-7b-instruct" match). The list is short on purpose: a model
// it misses is set with llm.vision true.
var visionModels = []string{
	"gpt-4o", "gpt-4.1", "gpt-4-turbo", "gpt-5",
	"claude-3", "claude-sonnet-4", "claude-opus-4", "claude-haiku-4",
	"gemini", "-vl", "llava", "pixtral", "llama-4", "vision", "minicpm-v", "glm-4v",
}

// oSeries are OpenAI's reasoning models, which take images except for the
// first minis and the o1 preview.
var (
	oSeries   = []string{"o1", "o3", "o4"}
	oNoVision = []string{"o1-mini", "o1-preview", "o3-mini"}
)

// VisionCapable reports whether the model c names is shown images: as
// llm.vision says, or for "auto" by the model's name. The offline model
// never is.
func (c Config) VisionCapable() bool {
	switch c.Vision {
	case VisionOn:
		return c.Provider != ProviderOffline
	case VisionOff:
		return false
	}
	return c.Provider != ProviderOffline && VisionByName(c.Model)
}

// VisionByName is the "auto" rule: whether a model of that name takes
// images.
func VisionByName(model string) bool {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:] // "openai/gpt-4o" on OpenRouter
	}
	for _, f := range visionModels {
		if strings.Contains(m, f) {
			return true
		}
	}
	for _, p := range oNoVision {
		if strings.HasPrefix(m, p) {
			return false
		}
	}
	for _, p := range oSeries {
		if m == p || strings.HasPrefix(m, p+"-") {
			return true
		}
	}
	return false
}

// dataURLsToBinary rewrites image parts given as data URLs
// ("data:image/png;base64,…", the form the agent uses, which langchaingo's
// OpenAI client sends as is) into BinaryContent, the only image form
// langchaingo's Anthropic client encodes. Other parts are kept.
func dataURLsToBinary(msgs []llms.MessageContent) []llms.MessageContent {
	var out []llms.MessageContent
	for i, m := range msgs {
		var parts []llms.ContentPart
		for j, p := range m.Parts {
			img, ok := p.(llms.ImageURLContent)
			if !ok {
				continue
			}
			mime, data, ok := decodeDataURL(img.URL)
			if !ok {
				continue
			}
			if parts == nil {
				parts = append([]llms.ContentPart(nil), m.Parts...)
			}
			parts[j] = llms.BinaryContent{MIMEType: mime, Data: data}
		}
		if parts == nil {
			continue
		}
		if out == nil {
			out = append([]llms.MessageContent(nil), msgs...)
		}
		out[i] = llms.MessageContent{Role: m.Role, Parts: parts}
	}
	if out == nil {
		return msgs
	}
	return out
}

// decodeDataURL reads "data:<mime>;base64,<data>".
func decodeDataURL(u string) (mime string, data []byte, ok bool) {
	rest, found := strings.CutPrefix(u, "data:")
	if !found {
		return "", nil, false
	}
	head, b64, found := strings.Cut(rest, ",")
	if !found {
		return "", nil, false
	}
	mime, found = strings.CutSuffix(head, ";base64")
	if !found {
		return "", nil, false
	}
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return "", nil, false
	}
	return mime, data, true
}
