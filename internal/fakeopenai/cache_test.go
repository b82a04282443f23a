package fakeopenai

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/shipmyagent/ship/internal/fakeclock"
)

// longSystem is a system prompt of about 1,500 estimated tokens.
var longSystem = strings.Repeat("Standing instructions that do not change. ", 140)

// cachedOf is the cached prompt tokens langchaingo read from the usage.
func cachedOf(t *testing.T, resp *llms.ContentResponse) (cached, prompt int) {
	t.Helper()
	info := resp.Choices[0].GenerationInfo
	c, ok1 := info["PromptCachedTokens"].(int)
	p, ok2 := info["PromptTokens"].(int)
	if !ok1 || !ok2 {
		t.Fatalf("usage without cached tokens: %v", info)
	}
	return c, p
}

// TestCachedTokensByPrefix: a conversation that only grows reads the
// earlier prompt from the cache, in 128-token steps, streamed or not; a
// prompt that changes at its start, a short prompt, another API key and an
// idle cache read nothing.
func TestCachedTokensByPrefix(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			t.Parallel()
			clk := fakeclock.New(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
			s, err := StartWithOptions(nil, Options{Now: clk.Now})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			var opts []llms.CallOption
			if stream {
				opts = append(opts, llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
			}
			call := func(key string, msgs ...llms.MessageContent) (int, int) {
				t.Helper()
				llm, err := openai.New(openai.WithBaseURL(s.BaseURL()), openai.WithToken(key), openai.WithModel("m"))
				if err != nil {
					t.Fatal(err)
				}
				resp, err := llm.GenerateContent(context.Background(), msgs, opts...)
				if err != nil {
					t.Fatal(err)
				}
				return cachedOf(t, resp)
			}
			sys := llms.TextParts(llms.ChatMessageTypeSystem, longSystem)
			first := []llms.MessageContent{sys, human("hello")}
			if c, p := call("k", first...); c != 0 || p < 1024 {
				t.Fatalf("first call: cached %d of %d, want 0 of ≥ 1024", c, p)
			}
			second := append(first, llms.TextParts(llms.ChatMessageTypeAI, "echo: hello"), human("and again"))
			c, p := call("k", second...)
			if c < 1024 || c%128 != 0 || c > p {
				t.Fatalf("second call: cached %d of %d, want a multiple of 128, at least 1024", c, p)
			}
			if p-c > 128+20 {
				t.Errorf("second call: cached %d of %d: more left uncached than the new turn and one step", c, p)
			}
			if got := s.Requests()[1].CachedTokens; got != c {
				t.Errorf("recorded cached tokens %d, reported %d", got, c)
			}

			// The start changes: nothing before it matches.
			moved := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "Time: 12:01. "+longSystem), human("hello")}
			if c, _ := call("k", moved...); c != 0 {
				t.Errorf("prompt changed at its start: cached %d, want 0", c)
			}
			// Another organization has a cache of its own.
			if c, _ := call("other", second...); c != 0 {
				t.Errorf("another key: cached %d, want 0", c)
			}
			// A short prompt is never cached.
			short := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "be brief"), human("hi")}
			call("k", short...)
			if c, _ := call("k", short...); c != 0 {
				t.Errorf("short prompt: cached %d, want 0", c)
			}
			// After more than five idle minutes the prefix is gone.
			clk.Advance(6 * time.Minute)
			if c, _ := call("k", second...); c != 0 {
				t.Errorf("after 6 idle minutes: cached %d, want 0", c)
			}
		})
	}
}
