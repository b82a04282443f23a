package telegram_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/shipmyagent/ship/adapters/telegram"
	"github.com/shipmyagent/ship/internal/adaptertest"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/faketelegram"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/queue"
)

// writer is a scripted model that answers every question with a chat_send
// of reply, written in pieces of bytes every pause; once the tool result
// is in, it ends the turn.
func writer(reply string, pieces int, pause time.Duration) fakeopenai.Handler {
	args, _ := json.Marshal(map[string]string{"text": reply})
	return func(r fakeopenai.Request) fakeopenai.Response {
		if len(r.ToolResults()) > 0 {
			return fakeopenai.Response{}
		}
		return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: "chat_send", Arguments: string(args)}},
			Pace: fakeopenai.Pace{Bytes: len(args)/pieces + 1, Every: pause}}
	}
}

// streaming sets an env up to stream replies, with limits.
func streaming(limits telegram.Limits, interval time.Duration) func(*telegram.Options) {
	return func(o *telegram.Options) {
		o.Streaming = true
		o.Limits = limits
		o.StreamInterval = interval
	}
}

// A short reply in a forum topic, done before its first update is due,
// goes out as one sendMessage: no send of the first words followed by an
// edit a moment later, two calls from the group's budget for one message.
func TestShortReplyInATopicIsOneSend(t *testing.T) {
	const group, topic = int64(-100700), int64(4)
	reply := "a short answer, written in a few pieces"
	e := newEnv(t, setup{
		model:  writer(reply, 6, 5*time.Millisecond),
		engine: func(o *engine.Options) { o.Stream = true },
		opts:   streaming(telegram.Limits{RetryBase: time.Millisecond}, 0),
	})
	e.tg.Push(e.tg.TopicText(group, topic, 7, "bob", e.tg.Mention()+" question"))
	sent := e.waitSent(1)
	e.idle()
	if len(e.tg.Sent()) != 1 || sent[0].Text != reply || sent[0].ThreadID != topic {
		t.Errorf("sent %+v, want the reply once, in the topic", e.tg.Sent())
	}
	if edits := e.tg.Edits(); len(edits) != 0 {
		t.Errorf("the reply was edited %d times after its send: %+v", len(edits), edits)
	}
}

// Two long replies streamed side by side into two topics of one forum
// stay within the group's budget, sends and edits together: no 429. The
// budget is 20 calls in a 6 s window here, a minute's shrunk tenfold (the
// rule's shape kept), with the adapter's limits to match, so that the test
// takes seconds; the model writes each reply over about 3 s, and the
// stream interval of 100 ms would edit 30 times a reply without the
// group's pace.
func TestLongStreamedRepliesStayInTheGroupBudget(t *testing.T) {
	const group = int64(-100701)
	tg, err := faketelegram.Start(faketelegram.Options{Token: token,
		GroupBudget: faketelegram.Budget{Calls: 20, Window: 6 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tg.Close)
	reply := strings.Repeat("a long answer, written slowly. ", 40)
	limits := telegram.Limits{PerChat: rate.Inf, Global: rate.Inf, PerGroup: rate.Limit(17.0 / 6), Burst: 3, RetryBase: time.Millisecond}
	e := newEnv(t, setup{tg: tg,
		model: writer(reply, 30, 100*time.Millisecond),
		engine: func(o *engine.Options) {
			o.Stream = true
			o.Queue = queue.Options{Concurrency: 2}
		},
		opts: streaming(limits, 100*time.Millisecond),
	})
	tg.Push(tg.TopicText(group, 1, 7, "bob", tg.Mention()+" first"))
	tg.Push(tg.TopicText(group, 2, 8, "cy", tg.Mention()+" second"))
	ctx, cancel := context.WithTimeout(e.ctx(), 30*time.Second) // hang guard
	defer cancel()
	shown := strings.TrimSpace(reply) // Telegram trims a message's ends; formatted replies come trimmed
	if err := tg.Wait(ctx, func() bool { return done(tg, group, 1, shown) && done(tg, group, 2, shown) }); err != nil {
		t.Fatalf("waiting for both replies: %v; shown %+v", err, tg.Shown())
	}
	e.idle()
	calls := tg.GroupCalls()
	for _, c := range calls {
		if c.RetryAfter > 0 {
			t.Errorf("%s drew a 429 (retry_after %d)", c.Method, c.RetryAfter)
		}
	}
	if len(tg.Edits()) == 0 {
		t.Error("no edit: the replies were not shown while written")
	}
	t.Logf("%d calls to the group for two replies, %d of them edits", len(calls), len(tg.Edits()))
}

// done reports whether the topic shows exactly one message of the bot,
// holding text.
func done(tg *faketelegram.Server, chatID, thread int64, text string) bool {
	var n int
	var last string
	for _, s := range tg.Shown() {
		if s.ChatID == chatID && s.ThreadID == thread {
			n++
			last = s.Text
		}
	}
	return n == 1 && last == text
}

// A 429 pauses only the chat that drew it: another chat's reply goes out
// while the first waits out its retry_after (5 s, far longer than an echo
// takes, so the order of the two replies shows it; the test's wall time is
// that pause).
func TestFloodPauseHoldsOnlyItsChat(t *testing.T) {
	e := newEnv(t, setup{engine: func(o *engine.Options) { o.Queue = queue.Options{Concurrency: 2} }})
	e.tg.FailNext("sendMessage", 1, faketelegram.Failure{RetryAfter: 5})
	e.tg.Push(e.tg.GroupText(-100702, 7, "bob", e.tg.Mention()+" first"))
	adaptertest.WaitFor(t, "the 429 answered", func() bool { return len(e.tg.Failures()) == 1 })
	e.tg.Push(e.tg.PrivateText(8, "cy", "second"))
	sent := e.waitSent(1)
	if sent[0].ChatID != 8 {
		t.Errorf("first reply went to chat %d, want the private chat while the group waits", sent[0].ChatID)
	}
}
