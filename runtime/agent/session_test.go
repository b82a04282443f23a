package agent

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
)

func userTurn(text string, tools int) exchange {
	t := exchange{llms.TextParts(llms.ChatMessageTypeHuman, text)}
	for i := 0; i < tools; i++ {
		id := fmt.Sprintf("%s-%d", text, i)
		t = append(t,
			llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{ID: id, FunctionCall: &llms.FunctionCall{Name: "chat_send"}}}},
			llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: id, Content: "ok"}}},
		)
	}
	return t
}

func TestTrimKeepsToolCallsWithTheirResults(t *testing.T) {
	ss := newSessions(HistoryLimits{MaxMessages: 6}, nil)
	var turns []exchange
	for i := 0; i < 5; i++ {
		turns = append(turns, userTurn(fmt.Sprintf("t%d", i), 1)) // 3 messages each
	}
	got, _ := ss.split(turns)
	// 15 messages over a limit of 6: the oldest go in a block, down to
	// half the limit (3 messages, the newest whole turn).
	if len(got) != 1 || textOf(got[0][0]) != "t4" {
		t.Fatalf("kept turns %v, want the newest whole turn", got)
	}
	// Every tool call kept has its result right after it.
	msgs := (&session{turns: got}).messages()
	for i, m := range msgs {
		for _, p := range m.Parts {
			if c, ok := p.(llms.ToolCall); ok {
				r, ok := msgs[i+1].Parts[0].(llms.ToolCallResponse)
				if !ok || r.ToolCallID != c.ID {
					t.Fatalf("tool call %s separated from its result", c.ID)
				}
			}
		}
	}
}

func TestNewestTurnIsKeptEvenWhenItAloneIsOverTheLimit(t *testing.T) {
	ss := newSessions(HistoryLimits{MaxMessages: 2}, nil)
	got, _ := ss.split([]exchange{userTurn("old", 0), userTurn("big", 5)})
	if len(got) != 1 || textOf(got[0][0]) != "big" || len(got[0]) != 11 {
		t.Fatalf("got %d turns", len(got))
	}
}

func TestLeastRecentlyUsedChatsAreDropped(t *testing.T) {
	ss := newSessions(HistoryLimits{MaxChats: 3}, nil)
	for i := 0; i < 5; i++ {
		ss.replace(fmt.Sprint(i), []exchange{userTurn("x", 0)}, "")
	}
	// Touch chat 2 so chat 3 is now the least recently used of {2, 3, 4}.
	if _, _, _, err := ss.history(context.Background(), "2", "", ""); err != nil {
		t.Fatal(err)
	}
	ss.replace("5", []exchange{userTurn("x", 0)}, "")
	if ss.len() != 3 {
		t.Fatalf("%d chats in memory, want 3", ss.len())
	}
	for _, k := range []string{"2", "4", "5"} {
		if _, ok := ss.m[k]; !ok {
			t.Errorf("chat %s was dropped", k)
		}
	}
}

func TestCompactTurnShortensOnlyToolResults(t *testing.T) {
	long := strings.Repeat("é", 3000) // 6000 bytes
	in := exchange{
		llms.TextParts(llms.ChatMessageTypeHuman, long),
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "a", Content: long}}},
	}
	out := compactTurn(in, 1001)
	if textOf(out[0]) != long {
		t.Error("user text was changed")
	}
	r := out[1].Parts[0].(llms.ToolCallResponse)
	if len(r.Content) > 1001+len("…(truncated)") || !strings.HasSuffix(r.Content, "…(truncated)") || !strings.HasPrefix(r.Content, "éé") {
		t.Errorf("tool result = %d bytes", len(r.Content))
	}
	if in[1].Parts[0].(llms.ToolCallResponse).Content != long {
		t.Error("compactTurn changed its input")
	}
}

func TestInjectHistoryKeepsTimeOrderAndSkipsSeen(t *testing.T) {
	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "sys"),
		llms.TextParts(llms.ChatMessageTypeHuman, "in memory"),
		llms.TextParts(llms.ChatMessageTypeHuman, "current"),
	}
	ec := newToolExecutionContext(msgs, 2, 3)
	n := ec.InjectHistory([]HistoryMessage{{Role: "user", Text: "b", TS: 20}, {Role: "user", Text: "current", TS: 30}, {Role: "user", Text: "in memory", TS: 5}})
	if n != 1 {
		t.Fatalf("inserted %d, want 1 (current and in-memory are seen)", n)
	}
	n = ec.InjectHistory([]HistoryMessage{{Role: "assistant", Text: "a", TS: 10}, {Role: "user", Text: "c", TS: 25}, {Role: "user", Text: "d", TS: 26}})
	if n != 2 || ec.Remaining() != 0 {
		t.Fatalf("inserted %d (remaining %d), want 2 then the cap of 3", n, ec.Remaining())
	}
	var got []string
	for _, m := range ec.snapshot() {
		got = append(got, textOf(m))
	}
	if want := "sys|in memory|a|b|c|current"; strings.Join(got, "|") != want {
		t.Errorf("messages %s, want %s", strings.Join(got, "|"), want)
	}
	if ec.CurrentUserText() != "current" {
		t.Errorf("current = %q", ec.CurrentUserText())
	}
}

func TestToolCallDeltasAreNotText(t *testing.T) {
	deltas := []string{
		`[{"id":"call_1","type":"function","function":{"name":"chat_send","arguments":""}}]`,
		`[{"type":"","function":{"name":"","arguments":"{\"te"}}]`,
	}
	for _, d := range deltas {
		if !isToolCallDelta([]byte(d)) {
			t.Errorf("%s taken for text", d)
		}
	}
	for _, text := range []string{"Hello", `[{"a":1}] is JSON`, `[{"a":1}]`, "[{", ""} {
		if isToolCallDelta([]byte(text)) {
			t.Errorf("%q taken for a tool-call delta", text)
		}
	}
}

func TestRepliesDeliveredByToolCallsCountAsSeen(t *testing.T) {
	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "sys"),
		llms.TextParts(llms.ChatMessageTypeHuman, "hello"),
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{ID: "1", FunctionCall: &llms.FunctionCall{Name: "chat_send", Arguments: `{"text":"hi there"}`}}}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "1", Content: `{"success":true}`}}},
		llms.TextParts(llms.ChatMessageTypeHuman, "what did I say?"),
	}
	ec := newToolExecutionContext(msgs, 4, 10)
	if n := ec.InjectHistory([]HistoryMessage{{Role: "user", Text: "hello", TS: 1}, {Role: "assistant", Text: "hi there", TS: 2}}); n != 0 {
		t.Errorf("re-injected %d messages already in memory", n)
	}
}

// History is trimmed in blocks: once over the limit it drops to half of
// it, and then stays the same, turn after turn, but for the new turns at
// its end, until the limit is reached again. The start of the prompt,
// which a provider's cache reuses, changes once per block, not per turn.
func TestTrimDropsABlockSoTheStartStaysPut(t *testing.T) {
	ss := newSessions(HistoryLimits{MaxMessages: 20}, nil)
	var turns []exchange
	starts := map[string]int{}
	for i := range 60 {
		turns, _ = ss.split(append(turns, userTurn(fmt.Sprintf("t%d", i), 0), exchange{llms.TextParts(llms.ChatMessageTypeAI, "ok")}))
		starts[textOf(turns[0][0])]++
	}
	// 2 messages a turn, limit 20: a block of 10 turns goes every 5 turns
	// after the first 10.
	if len(starts) > 12 {
		t.Fatalf("the history started at %d different turns over 60 turns, want a few blocks: %v", len(starts), starts)
	}
	if n := len(turns); n > 20 {
		t.Fatalf("%d messages kept, over the limit of 20", n)
	}
}
