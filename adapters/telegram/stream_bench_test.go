package telegram_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/time/rate"

	"github.com/shipmyagent/ship/adapters/telegram"
	"github.com/shipmyagent/ship/internal/adaptertest"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/faketelegram"
	"github.com/shipmyagent/ship/runtime/engine"
)

// BenchmarkFirstVisibleText measures how long a user waits, once the model
// has written its first token of a reply, until text shows in the chat: a
// draft in a private chat, the first message in a group. The real engine,
// langchaingo's OpenAI client and the adapter run against the loopback
// fakes; the time runs from the fake model flushing its first piece to the
// fake Bot API answering the draft or message (both loopback round trips
// included). Reported: mean and worst, in ms.
func BenchmarkFirstVisibleText(b *testing.B) {
	for _, kind := range []string{"private", "group"} {
		b.Run(kind, func(b *testing.B) { benchFirstVisible(b, kind) })
	}
}

func benchFirstVisible(b *testing.B, kind string) {
	tg, err := faketelegram.Start(faketelegram.Options{Token: token})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(tg.Close)
	reply := strings.Repeat("streamed words ", 12)
	args, _ := json.Marshal(map[string]string{"text": reply})
	model := func(r fakeopenai.Request) fakeopenai.Response {
		if len(r.ToolResults()) > 0 {
			return fakeopenai.Response{}
		}
		return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: "chat_send", Arguments: string(args)}},
			Pace: fakeopenai.Pace{Bytes: 24, Every: 5 * time.Millisecond}}
	}
	dir := b.TempDir()
	eng, fake := adaptertest.NewEngine(b, dir, model, zerolog.Nop(), func(o *engine.Options) { o.Stream = true })
	a, err := telegram.New(telegram.Options{
		Token: token, APIBase: tg.URL(), RequireMention: false, Streaming: true,
		PollTimeout: 2 * time.Second,
		Limits:      telegram.Limits{PerChat: rate.Inf, PerGroup: rate.Inf, Global: rate.Inf},
		Host:        eng, Logger: zerolog.Nop(),
	})
	if err != nil {
		b.Fatal(err)
	}
	eng.Register(a.Name(), a)
	stop := adaptertest.Run(b, a)
	b.Cleanup(func() {
		stop()
		_, _ = eng.Close(context.Background())
	})
	ctx := adaptertest.Ctx(b)
	if err := tg.WaitPolling(ctx); err != nil {
		b.Fatal(err)
	}

	var waits []time.Duration
	b.ResetTimer()
	for i := range b.N {
		chatID := int64(50_000 + i)
		if kind == "group" {
			chatID = -chatID
			tg.Push(tg.GroupText(chatID, 7, "ann", "hi"))
		} else {
			tg.Push(tg.PrivateText(chatID, "ann", "hi"))
		}
		var shown time.Time
		if err := tg.Wait(ctx, func() bool {
			shown = firstShown(tg, chatID)
			done := false
			for _, s := range tg.Shown() {
				done = done || s.ChatID == chatID && s.Text == reply
			}
			return !shown.IsZero() && done
		}); err != nil {
			b.Fatalf("turn %d: %v; drafts %+v; shown %+v", i, err, tg.Drafts(), tg.Shown())
		}
		firsts := fake.FirstPieces()
		waits = append(waits, shown.Sub(firsts[len(firsts)-1]))
	}
	b.StopTimer()
	var sum time.Duration
	for _, w := range waits {
		sum += w
	}
	b.ReportMetric(float64(sum.Microseconds())/float64(len(waits))/1000, "ms-mean")
	b.ReportMetric(float64(slices.Max(waits).Microseconds())/1000, "ms-max")
}

// firstShown is when chatID first showed text of the bot's: a draft or a
// message.
func firstShown(tg *faketelegram.Server, chatID int64) time.Time {
	for _, d := range tg.Drafts() {
		if d.ChatID == chatID {
			return d.At
		}
	}
	for _, s := range tg.Sent() {
		if s.ChatID == chatID {
			return s.At
		}
	}
	return time.Time{}
}
