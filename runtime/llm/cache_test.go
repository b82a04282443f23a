package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/internal/fakeanthropic"
)

// stable is a system prompt of about 1,500 estimated tokens, with bytes
// that JSON escapes.
var stable = strings.Repeat("Standing instructions: answer \"kindly\" & <briefly>.\n", 120)

func claudeWithFake(t *testing.T, h fakeanthropic.Handler) (llms.Model, *fakeanthropic.Server) {
	t.Helper()
	fake, err := fakeanthropic.Start(h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	m, err := New(Config{Provider: ProviderAnthropic, Model: "claude-sonnet-4-5", BaseURL: fake.BaseURL(), APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	return m, fake
}

// TestClaudeCallsReadTheirPrefixFromTheCache: over a conversation whose
// system prompt and history only grow, each turn's call reads the system
// prompt and the whole history before it from Anthropic's cache; a later
// call of the same turn (after a tool result) reads the turn so far; the
// runtime facts that change every turn, sent as a system message after the
// history, do not land in the system prompt. Streamed and not.
func TestClaudeCallsReadTheirPrefixFromTheCache(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			m, fake := claudeWithFake(t, func(r fakeanthropic.Request) fakeanthropic.Response {
				if strings.HasPrefix(r.LastUser(), "look") && len(r.ToolResults()) == 0 {
					return fakeanthropic.Response{ToolUses: []fakeanthropic.ToolUse{{Name: "chat_send", Input: `{"text":"looking"}`}}}
				}
				return fakeanthropic.Response{Text: "answer to " + r.LastUser() + ": " + strings.Repeat("words ", 40)}
			})
			var opts []llms.CallOption
			if stream {
				opts = append(opts, llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
			}
			opts = append(opts, llms.WithTools([]llms.Tool{sendTool}))
			var hist []llms.MessageContent
			for turn := 1; turn <= 4; turn++ {
				question := fmt.Sprintf("question %d", turn)
				if turn == 3 {
					question = "look it up"
				}
				msgs := append([]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, stable)}, hist...)
				msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeSystem, fmt.Sprintf("Current time: 12:%02d", turn)),
					llms.TextParts(llms.ChatMessageTypeHuman, question))
				resp, err := m.GenerateContent(context.Background(), msgs, opts...)
				if err != nil {
					t.Fatalf("turn %d: %v", turn, err)
				}
				produced := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, question)}
				if calls := resp.Choices[0].ToolCalls; len(calls) > 0 {
					ai := llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{calls[0]}}
					result := llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
						llms.ToolCallResponse{ToolCallID: calls[0].ID, Name: calls[0].FunctionCall.Name, Content: `{"ok":true}`}}}
					msgs = append(msgs, ai, result)
					if resp, err = m.GenerateContent(context.Background(), msgs, opts...); err != nil {
						t.Fatalf("turn %d, second call: %v", turn, err)
					}
					produced = append(produced, ai, result)
				}
				produced = append(produced, llms.TextParts(llms.ChatMessageTypeAI, resp.Choices[0].Content))
				hist = append(hist, produced...)
			}

			reqs := fake.Requests()
			if len(reqs) != 5 {
				t.Fatalf("%d requests, want 5", len(reqs))
			}
			for i, r := range reqs {
				if r.System != stable {
					t.Fatalf("request %d: the system prompt changed (%d bytes, want %d): the facts were glued on", i, len(r.System), len(stable))
				}
				if !slices.Contains(r.CacheBreakpoints, "system.0") || r.CacheBreakpoints[0] != "tools.0" {
					t.Errorf("request %d: breakpoints %v, want the last tool's and the system prompt's end", i, r.CacheBreakpoints)
				}
				if len(r.CacheBreakpoints) > 4 {
					t.Errorf("request %d: %d breakpoints", i, len(r.CacheBreakpoints))
				}
			}
			if r := reqs[0]; r.CacheReadTokens != 0 || r.CacheCreationTokens < 1024 {
				t.Errorf("first call: read %d, created %d; want the system prompt written", r.CacheReadTokens, r.CacheCreationTokens)
			}
			// Each call reads at least what the call it follows marked: the
			// turn before's first call (whose facts the history leaves out),
			// or, in a tool loop, the turn's call before it.
			for _, p := range [][2]int{{0, 1}, {1, 2}, {2, 3}, {2, 4}} {
				prev, r := reqs[p[0]], reqs[p[1]]
				if r.CacheReadTokens < prev.CacheReadTokens+prev.CacheCreationTokens {
					t.Errorf("call %d: read %d, want at least the %d call %d read or wrote (breakpoints %v)",
						p[1]+1, r.CacheReadTokens, prev.CacheReadTokens+prev.CacheCreationTokens, p[0]+1, r.CacheBreakpoints)
				}
			}
			// The tool loop's second call marks the tool result, and the
			// facts went out as user text right before the question.
			third := reqs[3]
			if last := third.CacheBreakpoints[len(third.CacheBreakpoints)-1]; last != fmt.Sprintf("messages.%d.content.0", len(third.Messages)-1) {
				t.Errorf("tool loop call: breakpoints %v, want the last message marked", third.CacheBreakpoints)
			}
			if n := len(reqs[4].Messages); reqs[4].Messages[n-2].Text() != "Current time: 12:04" || reqs[4].Messages[n-2].Role != "user" {
				t.Errorf("facts sent as %+v", reqs[4].Messages[n-2])
			}
		})
	}
}

// TestMarkBreakpointsSplices: marks go in (the last tool, the system
// prompt, the planned messages' last blocks) without changing a byte of
// the rest of the body, and a body that is not a Messages request is left as
// it was.
func TestMarkBreakpointsSplices(t *testing.T) {
	body := []byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a \"}\" b"}]},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{"k":"]"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}],"system":"sys \"x\"","max_tokens":5,` +
		`"tools":[{"name":"a","input_schema":{"type":"object"}},{"name":"b","input_schema":{"type":"object","properties":{"}":{}}}}]}`)
	got, err := markBreakpoints(body, cachePlan{system: true, messages: []int{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a \"}\" b"}]},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{"k":"]"},"cache_control":{"type":"ephemeral"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok","cache_control":{"type":"ephemeral"}}]}],` +
		`"system":[{"type":"text","text":"sys \"x\"","cache_control":{"type":"ephemeral"}}],"max_tokens":5,` +
		`"tools":[{"name":"a","input_schema":{"type":"object"}},{"name":"b","input_schema":{"type":"object","properties":{"}":{}}},"cache_control":{"type":"ephemeral"}}]}`
	if string(got) != want {
		t.Fatalf("marked\n%s\nwant\n%s", got, want)
	}
	if !json.Valid(got) {
		t.Fatal("marked body is not JSON")
	}
	for _, bad := range []string{`[1,2]`, `{"messages":`, `not json`} {
		if out, err := withBreakpoints(strings.NewReader(bad), cachePlan{system: true, messages: []int{0}}); err != nil || string(out) != bad {
			t.Errorf("%q came out as %q, %v", bad, out, err)
		}
	}
}

// TestClaudeCacheAfterALongTurn: after a turn of many tool calls (more
// than the API's 20-block lookback), the next turn still reads the history
// up to where the long turn began.
func TestClaudeCacheAfterALongTurn(t *testing.T) {
	m, fake := claudeWithFake(t, func(fakeanthropic.Request) fakeanthropic.Response {
		return fakeanthropic.Response{Text: "done"}
	})
	sys := llms.TextParts(llms.ChatMessageTypeSystem, stable)
	note := llms.TextParts(llms.ChatMessageTypeSystem, "Current time: 12:00")
	ask := func(hist []llms.MessageContent, q string) {
		t.Helper()
		msgs := append(append([]llms.MessageContent{sys}, hist...), note, llms.TextParts(llms.ChatMessageTypeHuman, q))
		if _, err := m.GenerateContent(context.Background(), msgs, llms.WithTools([]llms.Tool{sendTool})); err != nil {
			t.Fatal(err)
		}
	}
	hist := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "first"), llms.TextParts(llms.ChatMessageTypeAI, "one: "+strings.Repeat("a long first answer. ", 40))}
	ask(hist, "second") // marks the end of the first turn
	hist = append(hist, llms.TextParts(llms.ChatMessageTypeHuman, "second"))
	for i := range 12 {
		id := fmt.Sprintf("call_%d", i)
		hist = append(hist,
			llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{ID: id, Type: "function",
				FunctionCall: &llms.FunctionCall{Name: "chat_send", Arguments: `{"text":"part"}`}}}},
			llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
				llms.ToolCallResponse{ToolCallID: id, Name: "chat_send", Content: `{"ok":true}`}}})
	}
	hist = append(hist, llms.TextParts(llms.ChatMessageTypeAI, "two"))
	ask(hist, "third")
	reqs := fake.Requests()
	before, after := reqs[0], reqs[1]
	if want := before.CacheReadTokens + before.CacheCreationTokens; after.CacheReadTokens < want {
		t.Errorf("after a turn of 12 tool calls: read %d, want at least the %d marked before it (breakpoints %v)",
			after.CacheReadTokens, want, after.CacheBreakpoints)
	}
	if n := len(after.CacheBreakpoints); n > 4 {
		t.Errorf("%d breakpoints", n)
	}
}
