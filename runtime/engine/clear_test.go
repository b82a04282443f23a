package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/dispatch"
)

// A /clear that arrives while the chat's turn is running must still hold
// after that turn: the run must not write the history it read back over it.
func TestClearDuringARunIsNotUndone(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	h := newHarness(t, harnessOptions{handler: func(r fakeopenai.Request) fakeopenai.Response {
		if r.LastUser() == "slow question" && len(r.ToolResults()) == 0 {
			close(entered)
			<-release
		}
		return fakeopenai.EchoChatSend(r)
	}})
	h.ask("7", "m1", "my secret word is apple")

	done := h.send("7", "m2", "slow question")
	<-entered
	req := dispatch.RequestContext{Channel: testChannel, ChatID: "7", ChatKey: chatKeyOf("7")}
	if _, ok := h.engine.Command(context.Background(), "clear", "", req); !ok {
		t.Fatal("/clear not recognised")
	}
	close(release)
	<-done

	h.ask("7", "m3", "what is my secret word?")
	reqs := h.fake.Requests()
	last := reqs[len(reqs)-1]
	for _, m := range last.Messages[1 : len(last.Messages)-1] {
		if strings.Contains(m.Content, "apple") || strings.Contains(m.Content, "slow question") {
			t.Fatalf("history before /clear came back: %+v", last.Messages)
		}
	}
}
