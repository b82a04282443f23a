package engine_test

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/llm"
	"github.com/shipmyagent/ship/tools"
)

// BenchmarkTurn measures one whole turn — ingress (log the user message),
// queue, runtime (prompt, history, tool loop), chat_send (dispatch + log the
// reply) — with a model that answers instantly. The offline model runs
// in-process, so its figure is ship's own overhead; the fake OpenAI variant
// adds langchaingo's real HTTP client and JSON over loopback.
func BenchmarkTurn(b *testing.B) {
	fake, err := fakeopenai.StartWithOptions(nil, fakeopenai.Options{MaxRecorded: 16})
	if err != nil {
		b.Fatal(err)
	}
	defer fake.Close()
	remote, err := openai.New(openai.WithBaseURL(fake.BaseURL()), openai.WithToken("k"), openai.WithModel("m"))
	if err != nil {
		b.Fatal(err)
	}
	models := []struct {
		name  string
		model llms.Model
	}{{"offline", llm.NewOffline()}, {"fakeopenai", remote}}
	for _, m := range models {
		for _, d := range []chat.Durability{chat.DurabilityAlways, chat.DurabilityNone} {
			b.Run(fmt.Sprintf("model=%s/durability=%s", m.name, d), func(b *testing.B) {
				benchTurn(b, m.model, d)
			})
		}
	}
}

func benchTurn(b *testing.B, model llms.Model, d chat.Durability) {
	eng, err := engine.New(engine.Options{
		Tools:      tools.Default,
		ChatsDir:   filepath.Join(b.TempDir(), "chats"),
		Durability: d,
		Model:      model,
		Logger:     zerolog.New(io.Discard),
	})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close(context.Background())
	eng.Register(testChannel, dispatch.DispatcherFunc(func(context.Context, dispatch.RequestContext, string) error { return nil }))
	done := make(chan ingress.Outcome, 1)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		chatID := fmt.Sprint(i % 64)
		_, err := eng.Submit(ctx, ingress.Submission{
			Channel: testChannel,
			ChatKey: chatKeyOf(chatID),
			Message: ingress.IncomingChatMessage{ChatID: chatID, MessageID: fmt.Sprint(i), Text: "hello, how are you today?"},
			OnDone:  func(o ingress.Outcome) { done <- o },
		})
		if err != nil {
			b.Fatal(err)
		}
		if o := <-done; !o.Result.Delivered {
			b.Fatalf("turn %d not delivered: %+v", i, o)
		}
	}
}
