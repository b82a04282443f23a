package engine_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/llm"
)

// summarizer is a model that echoes every message and, asked for a summary
// (the summary prompt as its system message), answers with one naming
// every user message it was given; while failing is set it refuses those
// calls with a 500.
type summarizer struct {
	mu      sync.Mutex
	failing bool
	asked   int
}

func (s *summarizer) handle(r fakeopenai.Request) fakeopenai.Response {
	if strings.HasPrefix(r.Messages[0].Content, "You keep the memory of a chat") {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.asked++
		if s.failing {
			return fakeopenai.Response{Status: 500}
		}
		var said []string
		for _, line := range strings.Split(r.LastUser(), "\n") {
			if rest, ok := strings.CutPrefix(line, "User: "); ok {
				said = append(said, rest)
			}
			if rest, ok := strings.CutPrefix(line, "SUMMARY: "); ok {
				said = append(said, rest)
			}
		}
		return fakeopenai.Response{Content: "SUMMARY: " + strings.Join(said, "; ")}
	}
	return fakeopenai.EchoChatSend(r)
}

func systemOf(r fakeopenai.Request) string { return r.Messages[0].Content }

// turns are the model requests that answered messages, not summaries.
func turns(fake *fakeopenai.Server) []fakeopenai.Request {
	var out []fakeopenai.Request
	for _, r := range fake.Requests() {
		if !strings.HasPrefix(systemOf(r), "You keep the memory of a chat") {
			out = append(out, r)
		}
	}
	return out
}

// unlimited lets one person send the many messages a long chat takes.
var unlimited = ingress.UserLimiterOptions{Rate: 1000, Burst: 1000}

// Past its limit a chat's oldest turns are summarised in a call of their
// own; the summary stands in the system prompt ahead of the rest, carries
// the gist of the very first turn however long the chat runs, and the
// prompt stays bounded. It survives a restart; /clear drops it.
func TestASummaryStandsInForTheOldestTurns(t *testing.T) {
	dir := t.TempDir()
	s := &summarizer{}
	limits := agent.HistoryLimits{MaxMessages: 8}
	h := newHarness(t, harnessOptions{dir: dir, handler: s.handle, history: limits, userLimit: unlimited})
	for i := range 30 {
		h.ask("9", "m"+string(rune('a'+i)), "fact "+string(rune('A'+i)))
	}
	reqs := turns(h.fake)
	last := reqs[len(reqs)-1]
	if !strings.Contains(systemOf(last), "# Summary of the earlier conversation") || !strings.Contains(systemOf(last), "fact A") {
		t.Fatalf("after 30 turns the prompt does not carry turn 1:\n%s", systemOf(last))
	}
	if n := len(dialogue(last)); n > 8+1 {
		t.Fatalf("the prompt holds %d messages of history, over the limit of 8", n)
	}
	var summaries int
	for _, e := range h.entries(chatKeyOf("9")) {
		if e.Role == chat.RoleSummary {
			summaries++
		}
	}
	if summaries == 0 || summaries != s.asked {
		t.Fatalf("%d summary entries in the log for %d summaries made", summaries, s.asked)
	}
	h.close()

	h2 := newHarness(t, harnessOptions{dir: dir, handler: s.handle, history: limits, userLimit: unlimited})
	h2.ask("9", "after", "after the restart")
	first := turns(h2.fake)[0]
	if !strings.Contains(systemOf(first), "fact A") || len(dialogue(first)) > 8+1 {
		t.Fatalf("after a restart the summary is gone or the history unbounded:\n%s\n%d messages", systemOf(first), len(dialogue(first)))
	}

	if reply, _ := h2.engine.Command(context.Background(), "clear", "", dispatch.RequestContext{Channel: testChannel, ChatID: "9", ChatKey: chatKeyOf("9")}); !strings.HasPrefix(reply, "Done") {
		t.Fatalf("/clear: %q", reply)
	}
	h2.ask("9", "fresh", "a fresh start")
	reqs = turns(h2.fake)
	if sys := systemOf(reqs[len(reqs)-1]); strings.Contains(sys, "Summary of the earlier") {
		t.Fatalf("/clear kept the summary:\n%s", sys)
	}
}

// A summary that fails drops nothing: the turns stay history (the log is
// the truth anyway), and the next turn tries again.
func TestAFailedSummaryKeepsEveryMessage(t *testing.T) {
	s := &summarizer{failing: true}
	h := newHarness(t, harnessOptions{handler: s.handle, history: agent.HistoryLimits{MaxMessages: 6}, userLimit: unlimited})
	for i := range 5 {
		h.ask("4", "m"+string(rune('a'+i)), "note "+string(rune('A'+i)))
	}
	reqs := turns(h.fake)
	convo := dialogue(reqs[len(reqs)-1])
	if s.asked == 0 || len(convo) < 9 || convo[0].Content != "note A" {
		t.Fatalf("with summaries failing (%d tried) the history lost turns: %d messages, first %q", s.asked, len(convo), convo[0].Content)
	}
	s.mu.Lock()
	s.failing = false
	s.mu.Unlock()
	h.ask("4", "mz", "note Z")
	h.ask("4", "my", "note Y")
	h.ask("4", "mx", "note X")
	reqs = turns(h.fake)
	if sys := systemOf(reqs[len(reqs)-1]); !strings.Contains(sys, "note A") {
		t.Fatalf("the summary made once the model answered again does not carry the first turn:\n%s", sys)
	}
}

// A summary model that is not configured stops start-up with the names
// that are.
func TestAnUnknownSummaryModelIsRefused(t *testing.T) {
	_, err := engine.New(engine.Options{Model: llm.NewOffline(), ModelName: "offline", ChatsDir: t.TempDir(), SummaryModel: "cheap"})
	if err == nil || !strings.Contains(err.Error(), `history.summaryModel: no model "cheap"`) {
		t.Fatalf("start-up with an unknown summary model: %v", err)
	}
}
