package telegram

import (
	"context"
	"strconv"
	"sync"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/shipmyagent/ship/runtime/dispatch"
)

// typingEvery renews "typing…": Telegram shows it for about five seconds,
// or until the bot sends something.
const typingEvery = 4 * time.Second

// StartTyping shows "typing…" in req's chat and topic until stop, renewed
// every four seconds, unless streaming is off. stop returns once no chat action can follow it, so
// the reply that comes next is never followed by a stray "typing…".
func (a *Adapter) StartTyping(ctx context.Context, req dispatch.RequestContext) (stop func(context.Context)) {
	chatID, threadID, _, err := replyTarget(req)
	if err != nil || !a.streaming.Load() {
		return func(context.Context) {}
	}
	p := tgbotapi.Params{"chat_id": strconv.FormatInt(chatID, 10), "action": "typing"}
	if threadID != 0 {
		p["message_thread_id"] = strconv.FormatInt(threadID, 10)
	}
	quit, done := make(chan struct{}), make(chan struct{})
	ctx, cancel := context.WithCancel(ctx)
	started := a.workers.Go(func(wctx context.Context) {
		defer close(done)
		stopAfter := context.AfterFunc(wctx, cancel)
		defer stopAfter()
		tick := time.NewTicker(typingEvery)
		defer tick.Stop()
		for {
			if err := a.sender.call(ctx, chatID, "sendChatAction", p, false); err != nil && ctx.Err() == nil {
				a.log.Debug().Err(err).Int64("chatId", chatID).Msg("telegram typing indicator failed")
			}
			select {
			case <-tick.C:
			case <-quit:
				return
			case <-ctx.Done():
				return
			}
		}
	})
	if !started {
		cancel()
		return func(context.Context) {}
	}
	var once sync.Once
	return func(context.Context) {
		once.Do(func() {
			close(quit)
			<-done
			cancel()
		})
	}
}
