package telegram_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/shipmyagent/ship/adapters/telegram"
	"github.com/shipmyagent/ship/internal/fakeanthropic"
	"github.com/shipmyagent/ship/internal/faketelegram"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/llm"
)

// TestClaudeReplyStreamsAsDrafts: with Claude (langchaingo's Anthropic
// client as ship builds it, against the Anthropic fake) a reply written
// slowly shows in a private chat as drafts that grow, then as the one
// reply. Claude writes chat_send's text as input_json_delta events, which
// the client does not pass on by itself.
func TestClaudeReplyStreamsAsDrafts(t *testing.T) {
	reply := strings.TrimSpace(strings.Repeat("Claude writes this reply slowly. ", 6))
	input, _ := json.Marshal(map[string]string{"text": reply})
	fake, err := fakeanthropic.Start(func(r fakeanthropic.Request) fakeanthropic.Response {
		if len(r.ToolResults()) > 0 {
			return fakeanthropic.Response{}
		}
		// About a dozen pieces, each well after the last draft could go.
		return fakeanthropic.Response{ToolUses: []fakeanthropic.ToolUse{{Name: "chat_send", Input: string(input)}},
			Pace: fakeanthropic.Pace{Bytes: len(input)/12 + 1, Every: 20 * time.Millisecond}}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	claude, err := llm.New(llm.Config{Provider: llm.ProviderAnthropic, Model: "claude-test", BaseURL: fake.BaseURL(), APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, setup{
		engine: func(o *engine.Options) { o.Model, o.ModelName, o.Stream = claude, "anthropic/claude-test", true },
		opts:   func(o *telegram.Options) { o.Streaming, o.StreamInterval = true, time.Millisecond },
	})
	e.tg.Push(e.tg.PrivateText(31, "ann", "write slowly"))
	if err := e.tg.Wait(e.ctx(), func() bool {
		shown := e.tg.Shown()
		return len(shown) == 1 && shown[0].Text == reply
	}); err != nil {
		t.Fatalf("waiting for the reply: %v; shown %+v", err, e.tg.Shown())
	}
	var drafts []faketelegram.Draft
	for _, d := range e.tg.Drafts() {
		if d.ChatID == 31 {
			drafts = append(drafts, d)
		}
	}
	if len(drafts) < 3 {
		t.Fatalf("%d drafts while Claude wrote, want ≥ 3: %+v", len(drafts), drafts)
	}
	for i, d := range drafts {
		if !strings.HasPrefix(reply, d.Text) || i > 0 && len(d.Text) <= len(drafts[i-1].Text) {
			t.Errorf("draft %d %q does not grow the reply from %q", i, d.Text, drafts[max(i-1, 0)].Text)
		}
	}
	if fake.RequestCount() != 1 || !fake.Requests()[0].Stream {
		t.Errorf("%d model calls, want one streamed", fake.RequestCount())
	}
}
