package llm

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/internal/fakeopenai"
)

// The agent passes WithToolInputStream to every streamed call, whatever
// the provider: an OpenAI-style model must take it without sending it.
func TestOpenAIStreamedCallTakesAToolInputStream(t *testing.T) {
	srv := startFake(t, fakeopenai.Response{Content: "ok"})
	m, err := New(Config{Provider: ProviderOpenAI, BaseURL: srv.BaseURL()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.GenerateContent(t.Context(), []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")},
		llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }),
		WithToolInputStream(func(context.Context, int, string, string) {}))
	if err != nil {
		t.Fatalf("streamed call with a tool input stream: %v", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(srv.Requests()[0].Body, &fields); err != nil {
		t.Fatal(err)
	}
	if md, ok := fields["metadata"]; ok {
		t.Errorf("request carries metadata %s", md)
	}
}
