package fakeanthropic

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"

	"github.com/shipmyagent/ship/internal/fakeclock"
)

// longText is about 1,500 estimated tokens.
var longText = strings.Repeat("A document the user keeps asking about. ", 150)

// usageOf returns the cache split langchaingo read from the answer.
func usageOf(t *testing.T, resp *llms.ContentResponse) (input, created, read int) {
	t.Helper()
	info := resp.Choices[0].GenerationInfo
	in, ok1 := info["InputTokens"].(int)
	cr, ok2 := info["CacheCreationInputTokens"].(int)
	rd, ok3 := info["CacheReadInputTokens"].(int)
	if !ok1 || !ok2 || !ok3 {
		t.Fatalf("usage without cache fields: %v", info)
	}
	return in, cr, rd
}

// cachedHuman is a user message whose text carries a cache breakpoint.
func cachedHuman(text string) llms.MessageContent {
	return llms.MessageContent{Role: llms.ChatMessageTypeHuman,
		Parts: []llms.ContentPart{llms.WithCacheControl(llms.TextPart(text), anthropic.EphemeralCache())}}
}

// TestCacheBreakpoints: what a breakpoint marks is written on the first
// call and read on the next, streamed or not; without a breakpoint
// nothing is cached; a prefix shorter than the minimum, another key and
// an expired entry read nothing.
func TestCacheBreakpoints(t *testing.T) {
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
			call := func(key, model string, msgs ...llms.MessageContent) (int, int, int) {
				t.Helper()
				llm, err := anthropic.New(anthropic.WithBaseURL(s.BaseURL()), anthropic.WithToken(key), anthropic.WithModel(model))
				if err != nil {
					t.Fatal(err)
				}
				resp, err := llm.GenerateContent(context.Background(), msgs, opts...)
				if err != nil {
					t.Fatal(err)
				}
				return usageOf(t, resp)
			}
			sys := llms.TextParts(llms.ChatMessageTypeSystem, "be brief")
			first := []llms.MessageContent{sys, cachedHuman(longText)}
			in, created, read := call("k", "claude-sonnet-4-5", first...)
			if read != 0 || created < 1024 || in != 0 {
				t.Fatalf("first call: input %d, created %d, read %d; want the marked prefix written", in, created, read)
			}
			if bp := s.Requests()[0].CacheBreakpoints; len(bp) != 1 || bp[0] != "messages.0.content.0" {
				t.Errorf("breakpoints = %v", bp)
			}
			second := append(first, llms.TextParts(llms.ChatMessageTypeAI, "noted"), human("what does it say?"))
			in2, created2, read2 := call("k", "claude-sonnet-4-5", second...)
			if read2 != created || created2 != 0 || in2 <= 0 {
				t.Fatalf("second call: input %d, created %d, read %d; want %d read", in2, created2, read2, created)
			}
			if r := s.Requests()[1]; r.CacheReadTokens != read2 || r.CacheCreationTokens != 0 {
				t.Errorf("recorded read %d created %d", r.CacheReadTokens, r.CacheCreationTokens)
			}
			// Another organization has a cache of its own.
			if _, created, read := call("other", "claude-sonnet-4-5", second...); read != 0 || created == 0 {
				t.Errorf("another key: created %d, read %d; want written, not read", created, read)
			}
			// Unmarked, nothing is cached.
			if in, created, read := call("k", "claude-sonnet-4-5", sys, human(longText)); created != 0 || read != 0 || in < 1024 {
				t.Errorf("no breakpoint: input %d, created %d, read %d", in, created, read)
			}
			// Haiku caches only from 2,048 tokens.
			if in, created, read := call("k", "claude-haiku-4-5", first...); created != 0 || read != 0 || in < 1024 {
				t.Errorf("haiku, 1,500 tokens: input %d, created %d, read %d; want nothing cached", in, created, read)
			}
			// Five minutes after its last use the entry is gone.
			clk.Advance(5*time.Minute + time.Second)
			if _, created, read := call("k", "claude-sonnet-4-5", second...); read != 0 || created == 0 {
				t.Errorf("after 5 idle minutes: created %d, read %d; want written again", created, read)
			}
		})
	}
}

// TestTooManyBreakpoints: a fifth cache_control is refused as the API
// refuses it.
func TestTooManyBreakpoints(t *testing.T) {
	s := start(t, nil)
	var msgs []llms.MessageContent
	for i := range 5 {
		msgs = append(msgs, cachedHuman(fmt.Sprintf("part %d", i)), llms.TextParts(llms.ChatMessageTypeAI, "ok"))
	}
	msgs = append(msgs, human("go"))
	_, err := client(t, s, "k").GenerateContent(context.Background(), msgs)
	if err == nil || !strings.Contains(err.Error(), "A maximum of 4 blocks with cache_control") {
		t.Fatalf("err = %v, want the breakpoint limit", err)
	}
}

// TestCacheLookback: a breakpoint finds a prefix written by an earlier
// breakpoint up to 20 blocks before it, and not further.
func TestCacheLookback(t *testing.T) {
	s := start(t, nil)
	llm := client(t, s, "k")
	call := func(msgs []llms.MessageContent) int {
		t.Helper()
		resp, err := llm.GenerateContent(context.Background(), msgs)
		if err != nil {
			t.Fatal(err)
		}
		_, _, read := usageOf(t, resp)
		return read
	}
	// grow returns the text followed by n more exchanges, only the last
	// user message marked.
	grow := func(text string, n int) []llms.MessageContent {
		out := []llms.MessageContent{human(text)}
		for i := range n {
			out = append(out, llms.TextParts(llms.ChatMessageTypeAI, "ok"), human(fmt.Sprintf("more %d", i)))
		}
		out[len(out)-1] = cachedHuman(out[len(out)-1].Parts[0].(llms.TextContent).Text)
		return out
	}
	call([]llms.MessageContent{cachedHuman(longText)}) // writes the prefix ending at block 0
	if read := call(grow(longText, 9)); read == 0 {    // 18 blocks later
		t.Errorf("breakpoint 18 blocks after a cached prefix read nothing")
	}
	other := "Another document. " + longText
	call([]llms.MessageContent{cachedHuman(other)})
	if read := call(grow(other, 11)); read != 0 { // 22 blocks later
		t.Errorf("breakpoint 22 blocks after a cached prefix read %d, want 0 (beyond the lookback)", read)
	}
}
