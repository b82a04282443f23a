package llm

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/internal/fakeopenai"
)

// sentFields returns the top-level fields of the one request srv got.
func sentFields(t *testing.T, srv *fakeopenai.Server) map[string]json.RawMessage {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(reqs[0].Body, &fields); err != nil {
		t.Fatal(err)
	}
	return fields
}

func TestMaxTokensFieldTheServerReads(t *testing.T) {
	cases := []struct {
		name, field, want, not string
		topP                   bool
	}{
		// The fake is not api.openai.com: auto sends the legacy field.
		{"auto", "", "max_tokens", "max_completion_tokens", false},
		{"auto with top_p", "auto", "max_tokens", "max_completion_tokens", true},
		{"forced", "max_completion_tokens", "max_completion_tokens", "max_tokens", false},
		{"forced with top_p", "max_completion_tokens", "max_completion_tokens", "max_tokens", true},
		{"legacy", "max_tokens", "max_tokens", "max_completion_tokens", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := startFake(t, fakeopenai.Response{Content: "ok"})
			m, err := New(Config{Provider: ProviderOpenAI, BaseURL: srv.BaseURL(), MaxTokensField: c.field})
			if err != nil {
				t.Fatal(err)
			}
			opts := []llms.CallOption{llms.WithMaxTokens(123)}
			if c.topP {
				opts = append(opts, llms.WithTopP(0.5))
			}
			if _, err := m.GenerateContent(t.Context(), []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")}, opts...); err != nil {
				t.Fatal(err)
			}
			fields := sentFields(t, srv)
			if string(fields[c.want]) != "123" {
				t.Errorf("%s = %s, want 123; body %s", c.want, fields[c.want], srv.Requests()[0].Body)
			}
			if _, ok := fields[c.not]; ok {
				t.Errorf("body also carries %s: %s", c.not, srv.Requests()[0].Body)
			}
			if c.topP && string(fields["top_p"]) != "0.5" {
				t.Errorf("top_p = %s, want 0.5", fields["top_p"])
			}
		})
	}
}

func TestSentMaxTokensFieldByHost(t *testing.T) {
	cases := []struct{ base, field, want string }{
		{"", "", MaxTokensCompletion},
		{"https://api.openai.com/v1", "auto", MaxTokensCompletion},
		{"https://API.OpenAI.com:443/v1", "", MaxTokensCompletion},
		{"https://api.deepseek.com/v1", "", MaxTokensLegacy},
		{"http://127.0.0.1:11434/v1", "", MaxTokensLegacy},
		{"https://api.deepseek.com/v1", "max_completion_tokens", MaxTokensCompletion},
		{"https://api.openai.com/v1", "max_tokens", MaxTokensLegacy},
	}
	for _, c := range cases {
		if got := (Config{BaseURL: c.base, MaxTokensField: c.field}).SentMaxTokensField(); got != c.want {
			t.Errorf("base %q field %q: %s, want %s", c.base, c.field, got, c.want)
		}
	}
	err := Config{MaxTokensField: "max-tokens"}.ValidateTransport("llm")
	if err == nil || !errors.Is(err, ErrBadMaxTokensField) || !strings.Contains(err.Error(), "llm.maxTokensField") {
		t.Errorf("err = %v, want ErrBadMaxTokensField", err)
	}
}

// The body is spliced, not re-encoded: only the top-level key is renamed
// and top_p added, and every other byte (a nested property of the same
// name, a string that reads like the key, escaped quotes) stays as sent.
func TestRewriteTouchesOnlyTheTopLevelKey(t *testing.T) {
	d := bodyDoer{legacyMaxTokens: true}
	cases := []struct{ in, want string }{
		{`{"model":"m","max_completion_tokens":5}`, `{"model":"m","max_tokens":5}`},
		{`{"messages":[{"content":"say \"max_completion_tokens\": 9"}],"max_completion_tokens": 5}`,
			`{"messages":[{"content":"say \"max_completion_tokens\": 9"}],"max_tokens": 5}`},
		{`{"tools":[{"parameters":{"properties":{"max_completion_tokens":{"type":"integer"}}}}],"max_completion_tokens":7}`,
			`{"tools":[{"parameters":{"properties":{"max_completion_tokens":{"type":"integer"}}}}],"max_tokens":7}`},
		{`{"tools":[{"parameters":{"properties":{"max_completion_tokens":{}}}}]}`,
			`{"tools":[{"parameters":{"properties":{"max_completion_tokens":{}}}}]}`},
		{`{"content":"\\","max_completion_tokens":3}`, `{"content":"\\","max_tokens":3}`},
		{`not json`, `not json`},
	}
	for _, c := range cases {
		got, err := d.rewrite([]byte(c.in), 0, false)
		if err != nil || string(got) != c.want {
			t.Errorf("rewrite(%s) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	got, _ := bodyDoer{}.rewrite([]byte(`{"model":"m"}`), 0.5, true)
	if string(got) != `{"top_p":0.5,"model":"m"}` {
		t.Errorf("top_p: %s", got)
	}
	got, _ = bodyDoer{}.rewrite([]byte(`{}`), 0.5, true)
	if string(got) != `{"top_p":0.5}` {
		t.Errorf("top_p into an empty object: %s", got)
	}
}
