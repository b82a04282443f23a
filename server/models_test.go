package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
)

func TestModelsListsEveryConfiguredModelWithoutKeys(t *testing.T) {
	e := newEnv(t, setup{})
	r := e.get("/api/models")
	if r.status != http.StatusOK || strings.Contains(string(r.body), testModelKey) {
		t.Fatalf("GET /api/models: %d %s", r.status, r.body)
	}
	var got struct {
		Models []struct {
			Name, Provider, Model, Host string
			Default                     bool
			APIKey                      string `json:"apiKey"`
		}
		Default string
	}
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(e.fake.URL(), "http://")
	if got.Default != "default" || len(got.Models) != 2 {
		t.Fatalf("models = %s", r.body)
	}
	d, f := got.Models[0], got.Models[1]
	if d.Name != "default" || d.Provider != "openai" || d.Model != "m" || d.Host != host || !d.Default {
		t.Errorf("default model = %+v (host want %s)", d, host)
	}
	if f.Name != "fast" || f.Provider != "openai" || f.Model != "m-fast" || f.Host != host || f.Default {
		t.Errorf("fast model = %+v", f)
	}
}

func TestLLMConfigIsHonouredForThatRequest(t *testing.T) {
	e := newEnv(t, setup{})
	res := e.execute(map[string]any{"instructions": "tuned", "chatId": "t",
		"llmConfig": map[string]any{"model": "fast", "temperature": 0.7, "topP": 0.5, "maxTokens": 123}}).result(t)
	if !res.Success {
		t.Fatalf("execute: %+v", res)
	}
	last := func() fakeopenai.Request {
		reqs := e.fake.Requests()
		return reqs[len(reqs)-1]
	}
	r := last()
	if r.Model != "m-fast" || r.Temperature == nil || *r.Temperature != 0.7 || r.TopP == nil || *r.TopP != 0.5 || r.MaxTokens != 123 {
		t.Errorf("the model got model %s, temperature %v, top_p %v, max tokens %d; want m-fast, 0.7, 0.5, 123 (body %s)",
			r.Model, r.Temperature, r.TopP, r.MaxTokens, r.Body)
	}
	// The next request of the same chat is back to the chat's model.
	e.execute(map[string]any{"instructions": "plain", "chatId": "t"}).result(t)
	if r := last(); r.Model != "m" || r.TopP != nil || *r.Temperature != 0 {
		t.Errorf("a request without llmConfig got model %s, top_p %v, temperature %v", r.Model, r.TopP, *r.Temperature)
	}

	// /api/send, by provider and model id as before.
	sse := e.subscribe("/api/sse/api:chat:s", nil)
	body := `{"userMessageId":"s1","message":"sent","chatId":"s","llmConfig":{"provider":"openai","model":"m-fast","temperature":0.2}}`
	if ok := e.request(http.MethodPost, "/api/send", []byte(body), nil); ok.status != 200 {
		t.Fatalf("send: %d %s", ok.status, ok.body)
	}
	sse.untilFinal(t)
	if r := last(); r.Model != "m-fast" || *r.Temperature != 0.2 {
		t.Errorf("/api/send's llmConfig: model %s, temperature %v", r.Model, *r.Temperature)
	}
}

func TestLLMConfigValidation(t *testing.T) {
	e := newEnv(t, setup{})
	for cfg, field := range map[string]string{
		`{"model":"nope"}`:                     `llmConfig.model: no such model "nope"; configured: default, fast`,
		`{"provider":"anthropic","model":"m"}`: "llmConfig.model",
		`{"provider":"openai"}`:                "llmConfig.model is required",
		`{"model":"fast","temperature":3}`:     "llmConfig.temperature",
		`{"temperature":-1}`:                   "llmConfig.temperature",
		`{"topP":0}`:                           "llmConfig.topP",
		`{"topP":1.5}`:                         "llmConfig.topP",
		`{"maxTokens":0}`:                      "llmConfig.maxTokens",
		`{"maxTokens":1000000}`:                "llmConfig.maxTokens",
		`{"maxTokens":1.5}`:                    "llmConfig.maxTokens",
		`{"temperature":"hot"}`:                "llmConfig.temperature",
		`{"seed":1}`:                           "seed",
	} {
		for _, route := range []string{"/api/execute", "/api/send"} {
			body := `{"instructions":"hi","llmConfig":` + cfg + `}`
			if route == "/api/send" {
				body = `{"userMessageId":"v","message":"hi","llmConfig":` + cfg + `}`
			}
			r := e.request(http.MethodPost, route, []byte(body), nil)
			if r.status != 400 || r.errorCode(t) != "INVALID_INPUT" || !strings.Contains(r.message(t), field) {
				t.Errorf("%s %s: %d %s, want 400 naming %s", route, cfg, r.status, r.body, field)
			}
		}
	}
	if n := e.fake.RequestCount(); n != 0 {
		t.Errorf("rejected requests reached the model (%d calls)", n)
	}
}
