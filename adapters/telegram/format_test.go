package telegram_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/shipmyagent/ship/adapters/telegram"
	"github.com/shipmyagent/ship/runtime/engine"
)

// TestStreamedReplyEndsFormatted: a reply streamed into a group ends as
// formatted text (bold, inline code, a Go code block, a bullet) with no
// Markdown markers, and no call on the way was refused by the fake's
// entity checks.
func TestStreamedReplyEndsFormatted(t *testing.T) {
	const group = int64(-100710)
	reply := "**Answer**: use `min`.\n\n```go\nfmt.Println(min(1, 2)) // 1 < 2 && 2 > 1\n```\n\n- done"
	e := newEnv(t, setup{
		model:  writer(reply, 8, 20*time.Millisecond),
		engine: func(o *engine.Options) { o.Stream = true },
		opts:   streaming(telegram.Limits{RetryBase: time.Millisecond}, 10*time.Millisecond),
	})
	e.tg.Push(e.tg.GroupText(group, 7, "bob", e.tg.Mention()+" question"))
	e.waitSent(1)
	e.idle()
	if f := e.tg.Failures(); len(f) != 0 {
		t.Fatalf("calls refused: %+v", f)
	}
	shown := e.tg.Shown()
	if len(shown) != 1 {
		t.Fatalf("%d messages shown, want 1: %+v", len(shown), shown)
	}
	m, _ := e.tg.Message(group, shown[0].MessageID)
	want := "Answer: use min.\n\nfmt.Println(min(1, 2)) // 1 < 2 && 2 > 1\n\n• done"
	if m.Text != want {
		t.Fatalf("shown %q, want %q", m.Text, want)
	}
	var ents []struct{ Type, Language string }
	if err := json.Unmarshal([]byte(m.Entities), &ents); err != nil {
		t.Fatalf("entities %q: %v", m.Entities, err)
	}
	var types []string
	for _, en := range ents {
		types = append(types, en.Type+en.Language)
	}
	if got := strings.Join(types, ","); got != "bold,code,prego" {
		t.Fatalf("entities %s, want bold,code,prego", got)
	}
}

// TestStreamedPreviewsShowNoMarkers: the drafts shown in a private chat
// while a reply is written never show "**" or "`": spans still open are
// closed in each preview, and a marker just typed waits for its text.
func TestStreamedPreviewsShowNoMarkers(t *testing.T) {
	reply := "The **answer** is `42`, and **it is final** — see the `docs` for *why* it is."
	e := newEnv(t, setup{
		model:  writer(reply, 25, 15*time.Millisecond),
		engine: func(o *engine.Options) { o.Stream = true },
		opts:   streaming(telegram.Limits{PerChat: rate.Inf, Global: rate.Inf, RetryBase: time.Millisecond}, time.Millisecond),
	})
	e.tg.Push(e.tg.PrivateText(5, "ann", "question"))
	sent := e.waitSent(1)
	e.idle()
	drafts := e.tg.Drafts()
	if len(drafts) < 3 {
		t.Fatalf("%d drafts: the reply was not previewed while written", len(drafts))
	}
	for _, d := range drafts {
		if strings.ContainsAny(d.Text, "*`") {
			t.Errorf("a preview shows markers: %q", d.Text)
		}
		if d.Params["entities"] == "" && strings.Contains(d.Text, "answer") {
			t.Errorf("a preview has no formatting: %q", d.Text)
		}
	}
	if want := "The answer is 42, and it is final — see the docs for why it is."; sent[0].Text != want {
		t.Errorf("sent %q, want %q", sent[0].Text, want)
	}
}
