package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/internal/fakeanthropic"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/llm"
)

// cacheRuntime is a runtime on model with a clock that stands still, so
// that only the conversation changes between runs.
func cacheRuntime(t *testing.T, cfg llm.Config) *agent.Runtime {
	t.Helper()
	model, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	noon := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	rt, err := agent.New(agent.Options{Model: model, Now: func() time.Time { return noon },
		Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// converse runs the questions one after another in one chat and returns
// each run's usage.
func converse(t *testing.T, rt *agent.Runtime, questions ...string) []agent.Usage {
	t.Helper()
	var out []agent.Usage
	for _, q := range questions {
		res, err := rt.Run(context.Background(), agent.AgentRunInput{ChatKey: "api:chat:cache", Instructions: q})
		if err != nil || !res.Success {
			t.Fatalf("run %q: %+v %v", q, res, err)
		}
		out = append(out, res.Usage)
	}
	return out
}

// A first question long enough (about 1,600 estimated tokens) that the
// conversation after it passes the providers' 1,024-token minimum.
var longQuestion = "Please keep this document in mind: " + strings.Repeat("the quarterly figures rose again. ", 190)

// TestUsageCountsCachedTokensOpenAI: a run's usage carries the prompt
// tokens the OpenAI-style provider read from its cache, as part of the
// prompt tokens.
func TestUsageCountsCachedTokensOpenAI(t *testing.T) {
	fake, err := fakeopenai.Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	rt := cacheRuntime(t, llm.Config{Provider: llm.ProviderOpenAI, Model: "gpt-test", BaseURL: fake.BaseURL(), APIKey: "k"})
	usage := converse(t, rt, longQuestion, "and the outlook?", "and next year?")
	reqs := fake.Requests()
	for i, u := range usage {
		if u.CachedPromptTokens != reqs[i].CachedTokens || u.CachedPromptTokens > u.PromptTokens {
			t.Errorf("run %d: usage %+v, the provider reported %d cached", i+1, u, reqs[i].CachedTokens)
		}
	}
	// The third run's prompt starts with the second's up to the second's
	// runtime note: the system prompt and the long first turn.
	if usage[2].CachedPromptTokens < 1024 {
		t.Errorf("third run: %d cached tokens, want the history before it", usage[2].CachedPromptTokens)
	}
}

// TestUsageCountsCachedTokensAnthropic: with Claude, the cache reads are
// the cached tokens, and the prompt counts reads, writes and the rest.
func TestUsageCountsCachedTokensAnthropic(t *testing.T) {
	fake, err := fakeanthropic.Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	rt := cacheRuntime(t, llm.Config{Provider: llm.ProviderAnthropic, Model: "claude-sonnet-4-5", BaseURL: fake.BaseURL(), APIKey: "k"})
	usage := converse(t, rt, longQuestion, "and the outlook?", "and next year?")
	reqs := fake.Requests()
	for i, u := range usage {
		r := reqs[i]
		if u.CachedPromptTokens != r.CacheReadTokens || u.PromptTokens < r.CacheReadTokens+r.CacheCreationTokens {
			t.Errorf("run %d: usage %+v, the provider reported %d read, %d written", i+1, u, r.CacheReadTokens, r.CacheCreationTokens)
		}
	}
	if usage[2].CachedPromptTokens < 1024 {
		t.Errorf("third run read %d tokens from the cache, want the history before it", usage[2].CachedPromptTokens)
	}
}
