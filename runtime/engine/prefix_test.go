package engine_test

import (
	"reflect"
	"strings"
	"testing"
)

// Each request to the model starts with everything the request before it
// held but its runtime note and its message: the system prompt (no time in
// it) and the history, byte for byte. That is the part a provider's prefix
// cache reuses; only the last turn, the new note and the new message are
// new.
func TestThePromptPrefixStaysPutFromTurnToTurn(t *testing.T) {
	h := newHarness(t, harnessOptions{agentMD: "You are the team's assistant.", userLimit: unlimited})
	for i := range 12 {
		h.ask("3", "p"+string(rune('a'+i)), "question "+string(rune('A'+i)))
	}
	reqs := turns(h.fake)
	for i := 1; i < len(reqs); i++ {
		prev, cur := reqs[i-1].Messages, reqs[i].Messages
		stable := prev[:len(prev)-2] // all but the runtime note and the message
		if !strings.HasPrefix(prev[len(prev)-2].Content, "[ship runtime") {
			t.Fatalf("request %d: the message before the user's is not the runtime note: %+v", i, prev[len(prev)-2])
		}
		if strings.Contains(stable[0].Content, "Current time") {
			t.Fatalf("the system prompt holds the time:\n%s", stable[0].Content)
		}
		if len(cur) < len(stable) || !reflect.DeepEqual(cur[:len(stable)], stable) {
			t.Fatalf("request %d does not start with request %d's system prompt and history", i+1, i)
		}
		if next := cur[len(stable)]; next.Role != "user" || next.Content != prev[len(prev)-1].Content {
			t.Fatalf("request %d: after the history comes %q, want the previous message without its runtime note", i+1, next.Content)
		}
	}
}
