package llm

import (
	"errors"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
)

func TestValidateNamesTheFix(t *testing.T) {
	cases := []struct {
		cfg  Config
		want error
		hint string
	}{
		{Config{}, ErrNoProvider, "LLM_PROVIDER"},
		{Config{Provider: "openai"}, ErrMissingAPIKey, "LLM_API_KEY"},
		{Config{Provider: "anthropic"}, ErrMissingAPIKey, "--offline"},
		{Config{Provider: "gemini-ish", APIKey: "k"}, ErrUnknownProvider, "LLM_PROVIDER"},
		{Config{Provider: "openai", APIKey: "k", BaseURL: "ftp://x"}, ErrBadBaseURL, "LLM_BASE_URL"},
	}
	for _, c := range cases {
		err := c.cfg.Validate()
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.hint) {
			t.Errorf("%+v: err = %v, want %v mentioning %s", c.cfg, err, c.want, c.hint)
		}
	}
	ok := []Config{
		{Provider: "offline"},
		{Provider: "openai", APIKey: "k"},
		{Provider: "deepseek", APIKey: "k", BaseURL: "https://api.deepseek.com/v1"},
		{Provider: "ollama", BaseURL: "http://127.0.0.1:11434/v1"}, // local: no key needed
	}
	for _, c := range ok {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
		if _, err := New(c); err != nil {
			t.Errorf("New(%+v): %v", c, err)
		}
	}
}

func TestValidateNeverEchoesTheKey(t *testing.T) {
	err := Config{Provider: "openai", APIKey: "sk-very-secret", BaseURL: "::bad"}.Validate()
	if err == nil || strings.Contains(err.Error(), "sk-very-secret") {
		t.Fatalf("err = %v", err)
	}
	err = Config{Provider: "openai", APIKey: "k", BaseURL: "ftp://user:pw@host/v1"}.Validate()
	if err == nil || strings.Contains(err.Error(), "pw") {
		t.Fatalf("err = %v leaks URL credentials", err)
	}
}

func TestSplitToolCallsGivesEachCallItsOwnMessage(t *testing.T) {
	call := func(id string) llms.ToolCall {
		return llms.ToolCall{ID: id, Type: "function", FunctionCall: &llms.FunctionCall{Name: "chat_send", Arguments: `{}`}}
	}
	result := func(id string) llms.MessageContent {
		return llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: id, Content: "ok " + id}}}
	}
	in := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeHuman, "hi"),
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.TextContent{Text: "thinking"}, call("a"), call("b")}},
		result("a"), result("b"),
	}
	out := splitToolCalls(in)
	var got []string
	for _, m := range out {
		if len(m.Parts) != 1 {
			t.Fatalf("message with %d parts: %+v", len(m.Parts), m)
		}
		switch p := m.Parts[0].(type) {
		case llms.TextContent:
			got = append(got, string(m.Role)+":"+p.Text)
		case llms.ToolCall:
			got = append(got, "call:"+p.ID)
		case llms.ToolCallResponse:
			got = append(got, "result:"+p.ToolCallID)
		}
	}
	want := "human:hi ai:thinking call:a result:a call:b result:b"
	if strings.Join(got, " ") != want {
		t.Errorf("got %s\nwant %s", strings.Join(got, " "), want)
	}
}
