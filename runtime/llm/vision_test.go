package llm

import (
	"encoding/json"
	"testing"

	"github.com/tmc/langchaingo/llms"
)

func TestVisionByName(t *testing.T) {
	yes := []string{"gpt-4o", "gpt-4o-mini", "GPT-4.1-mini", "gpt-5", "o1", "o3", "o4-mini", "claude-3-5-sonnet-latest",
		"claude-sonnet-4-5", "claude-opus-4-1", "gemini-2.5-flash", "qwen-vl-max", "qwen2.5-vl-72b-instruct",
		"llava:13b", "pixtral-12b", "meta-llama/llama-4-scout", "llama3.2-vision", "openai/gpt-4o"}
	no := []string{"gpt-3.5-turbo", "gpt-4", "o1-mini", "o3-mini", "deepseek-chat", "qwen-max", "claude-2.1", "mistral-large", "fake", ""}
	for _, m := range yes {
		if !VisionByName(m) {
			t.Errorf("VisionByName(%q) = false", m)
		}
	}
	for _, m := range no {
		if VisionByName(m) {
			t.Errorf("VisionByName(%q) = true", m)
		}
	}
}

func TestVisionSetting(t *testing.T) {
	for _, c := range []struct {
		json string
		cfg  Config
		want bool
	}{
		{`{"model":"gpt-4o"}`, Config{}, true},
		{`{"model":"deepseek-chat"}`, Config{}, false},
		{`{"model":"deepseek-chat","vision":true}`, Config{}, true},
		{`{"model":"gpt-4o","vision":"false"}`, Config{}, false},
		{`{"model":"my-local","vision":"TRUE"}`, Config{}, true},
		{`{"provider":"offline","model":"gpt-4o","vision":true}`, Config{}, false},
	} {
		cfg := c.cfg
		if err := json.Unmarshal([]byte(c.json), &cfg); err != nil {
			t.Fatalf("%s: %v", c.json, err)
		}
		if !cfg.Vision.Valid() {
			t.Errorf("%s: not valid", c.json)
		}
		if got := cfg.VisionCapable(); got != c.want {
			t.Errorf("%s: VisionCapable = %v", c.json, got)
		}
	}
	var cfg Config
	if err := json.Unmarshal([]byte(`{"vision":"sometimes"}`), &cfg); err != nil || cfg.Vision.Valid() {
		t.Errorf("vision \"sometimes\" = %q, %v: want invalid", cfg.Vision, err)
	}
}

func TestDataURLsBecomeBinaryForAnthropic(t *testing.T) {
	in := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "sys"),
		{Role: llms.ChatMessageTypeHuman, Parts: []llms.ContentPart{
			llms.TextContent{Text: "look"},
			llms.ImageURLContent{URL: "data:image/png;base64,aGk="},
			llms.ImageURLContent{URL: "https://example.com/a.png"},
		}},
	}
	out := dataURLsToBinary(in)
	b, ok := out[1].Parts[1].(llms.BinaryContent)
	if !ok || b.MIMEType != "image/png" || string(b.Data) != "hi" {
		t.Fatalf("part = %#v", out[1].Parts[1])
	}
	if _, ok := out[1].Parts[2].(llms.ImageURLContent); !ok {
		t.Error("an https image URL was changed")
	}
	if _, ok := in[1].Parts[1].(llms.ImageURLContent); !ok {
		t.Error("the caller's messages were changed")
	}
}
