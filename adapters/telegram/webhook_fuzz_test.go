package telegram_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/time/rate"

	"github.com/shipmyagent/ship/adapters/telegram"
	"github.com/shipmyagent/ship/internal/faketelegram"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/llm"
	"github.com/shipmyagent/ship/tools"
)

// hookSecret is the secret_token of the webhook targets below.
const hookSecret = "fuzz-secret_0123456789"

// secretHeader is where Telegram puts the secret_token.
const secretHeader = "X-Telegram-Bot-Api-Secret-Token"

// maxServerBody is the limit ship's HTTP server puts on webhook bodies
// (server.Options.MaxBodyBytes' default, applied with http.MaxBytesHandler).
const maxServerBody = 1 << 20

// Real updates, as the Bot API sends them (bot: id 1000, @ship_test_bot).
var seedUpdates = []string{
	// A private text.
	`{"update_id":500001,"message":{"message_id":11,"from":{"id":42,"is_bot":false,"first_name":"Ann","username":"ann","language_code":"en"},"chat":{"id":42,"first_name":"Ann","username":"ann","type":"private"},"date":1767225600,"text":"hello there"}}`,
	// A group message addressed with a mention entity.
	`{"update_id":500002,"message":{"message_id":12,"from":{"id":43,"is_bot":false,"first_name":"Bob"},"chat":{"id":-1001234567890,"title":"Team","type":"supergroup"},"date":1767225601,"text":"@ship_test_bot what is 2+2?","entities":[{"offset":0,"length":14,"type":"mention"}]}}`,
	// A message in a forum topic (a reply to the topic's creation message).
	`{"update_id":500003,"message":{"message_id":80,"message_thread_id":77,"is_topic_message":true,"from":{"id":44,"is_bot":false,"first_name":"Cy","username":"cy"},"chat":{"id":-1009876543210,"title":"Forum","type":"supergroup","is_forum":true},"date":1767225602,"reply_to_message":{"message_id":77,"message_thread_id":77,"is_topic_message":true,"from":{"id":44,"is_bot":false,"first_name":"Cy"},"chat":{"id":-1009876543210,"title":"Forum","type":"supergroup","is_forum":true},"date":1767225000,"forum_topic_created":{"name":"Ideas","icon_color":7322096}},"text":"@ship_test_bot summarise the topic","entities":[{"offset":0,"length":14,"type":"mention"}]}}`,
	// A command for this bot in a group.
	`{"update_id":500004,"message":{"message_id":13,"from":{"id":43,"is_bot":false,"first_name":"Bob"},"chat":{"id":-1001234567890,"title":"Team","type":"supergroup"},"date":1767225603,"text":"/help@ship_test_bot","entities":[{"offset":0,"length":19,"type":"bot_command"}]}}`,
	// A reply to the bot, with non-BMP text (UTF-16 offsets).
	`{"update_id":500005,"message":{"message_id":14,"from":{"id":43,"is_bot":false,"first_name":"Bob"},"chat":{"id":-1001234567890,"title":"Team","type":"supergroup"},"date":1767225604,"reply_to_message":{"message_id":9,"from":{"id":1000,"is_bot":true,"first_name":"Ship","username":"ship_test_bot"},"chat":{"id":-1001234567890,"title":"Team","type":"supergroup"},"date":1767225500,"text":"earlier answer"},"text":"👍🏽 и ещё 中文 @ship_test_bot","entities":[{"offset":15,"length":14,"type":"mention"}]}}`,
	// A photo with a caption in a private chat.
	`{"update_id":500006,"message":{"message_id":15,"from":{"id":42,"is_bot":false,"first_name":"Ann"},"chat":{"id":42,"first_name":"Ann","type":"private"},"date":1767225605,"photo":[{"file_id":"AgAD1","file_unique_id":"u1","width":90,"height":90,"file_size":1200}],"caption":"what is this?"}}`,
	// An edited message and a member joining: logged or ignored, never answered.
	`{"update_id":500007,"edited_message":{"message_id":11,"from":{"id":42,"is_bot":false,"first_name":"Ann"},"chat":{"id":42,"first_name":"Ann","type":"private"},"date":1767225600,"edit_date":1767225700,"text":"hello (edited)"}}`,
	`{"update_id":500008,"message":{"message_id":16,"from":{"id":45,"is_bot":false,"first_name":"Dee"},"chat":{"id":-1001234567890,"title":"Team","type":"supergroup"},"date":1767225606,"new_chat_members":[{"id":45,"is_bot":false,"first_name":"Dee"}]}}`,
}

// hookTarget is a Telegram adapter in webhook mode, identified and ready,
// with the offline model behind it; requests go straight to ServeHTTP.
type hookTarget struct {
	adapter *telegram.Adapter
	engine  *engine.Engine
	tg      *faketelegram.Server
}

func newHookTarget(tb testing.TB) *hookTarget {
	tb.Helper()
	tg, err := faketelegram.Start(faketelegram.Options{Token: token})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(tg.Close)
	dir := tb.TempDir()
	eng, err := engine.New(engine.Options{
		Tools:    tools.Default,
		ChatsDir: filepath.Join(dir, "chats"), Durability: chat.DurabilityNone,
		Model: llm.NewOffline(), Logger: zerolog.Nop(),
	})
	if err != nil {
		tb.Fatal(err)
	}
	a, err := telegram.New(telegram.Options{
		Token: token, APIBase: tg.URL(), Mode: telegram.ModeWebhook,
		WebhookURL: "http://127.0.0.1:9", WebhookSecret: hookSecret, RequireMention: true,
		CacheDir: filepath.Join(dir, "cache"),
		Limits:   telegram.Limits{PerChat: rate.Inf, PerGroup: rate.Inf, Global: rate.Inf, RetryBase: time.Millisecond},
		Host:     eng, Logger: zerolog.Nop(),
	})
	if err != nil {
		tb.Fatal(err)
	}
	eng.Register(a.Name(), a)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = a.Run(ctx)
	}()
	tb.Cleanup(func() {
		cancel()
		wg.Wait()
		_, _ = eng.Close(context.Background())
	})
	deadline := time.Now().Add(30 * time.Second) // hang guard
	for a.Status().State != "running" {
		if time.Now().After(deadline) {
			tb.Fatalf("the adapter never ran: %+v", a.Status())
		}
		time.Sleep(time.Millisecond)
	}
	return &hookTarget{adapter: a, engine: eng, tg: tg}
}

// post calls ServeHTTP as ship's server does for a webhook; header "" sends
// no secret header at all. bounded wraps the adapter in the server's
// http.MaxBytesHandler.
func (h *hookTarget) post(body []byte, secret string, bounded bool) int {
	req := httptest.NewRequest(http.MethodPost, telegram.WebhookPath, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header[secretHeader] = []string{secret} // as sent, even if not a valid header value
	}
	rec := httptest.NewRecorder()
	var handler http.Handler = h.adapter
	if bounded {
		handler = http.MaxBytesHandler(h.adapter, maxServerBody)
	}
	handler.ServeHTTP(rec, req)
	return rec.Code
}

// untouched fails unless nothing was logged, queued or sent.
func (h *hookTarget) untouched(t *testing.T, what string) {
	t.Helper()
	keys, err := h.engine.ChatKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st := h.engine.QueueStats(); len(keys) != 0 || st.Waiting+st.Running != 0 || len(h.tg.Sent()) != 0 {
		t.Fatalf("%s changed something: chats %v, queue %+v, %d sent", what, keys, st, len(h.tg.Sent()))
	}
}

// FuzzWebhookWithoutTheSecret: whatever the body and whatever secret header
// (other than the right one), the answer is 401 and nothing is logged,
// queued or sent.
func FuzzWebhookWithoutTheSecret(f *testing.F) {
	for _, u := range seedUpdates {
		for _, s := range []string{"", "wrong", strings.ToUpper(hookSecret), hookSecret + " ", hookSecret[:len(hookSecret)-1]} {
			f.Add([]byte(u), s)
		}
	}
	f.Add([]byte(strings.Repeat("[", 10_000)), "x")
	f.Add([]byte("{\"update_id\":1,\"message\":{\"text\":\"\xff\xfe\"}}"), "\x00")
	h := newHookTarget(f)
	f.Fuzz(func(t *testing.T, body []byte, secret string) {
		if secret == hookSecret {
			t.Skip("the right secret: FuzzWebhookWithTheSecret covers it")
		}
		if code := h.post(body, secret, false); code != http.StatusUnauthorized {
			t.Fatalf("secret %q: %d, want 401", secret, code)
		}
		h.untouched(t, "a call without the secret")
	})
}

// FuzzWebhookWithTheSecret sends arbitrary bodies with the right secret,
// as ship's server mounts the adapter: no panic, and a 2xx only for a body
// that is JSON (re-deliveries of bad ones would not help, so a JSON body
// that is no update is acknowledged and dropped).
func FuzzWebhookWithTheSecret(f *testing.F) {
	for _, u := range seedUpdates {
		f.Add([]byte(u))
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"update_id":1,"message":null}`))
	f.Add([]byte(`{"update_id":1,"message":{"message_id":1,"chat":{"id":1,"type":"private"},"from":{"id":1},"text":"/"}}`))
	f.Add([]byte(`{"update_id":1,"message":{"message_id":1,"chat":{"id":1,"type":"private"},"from":{"id":1},"text":"a","entities":[{"offset":-5,"length":99999999,"type":"mention"}]}}`))
	f.Add([]byte("\xef\xbb\xbf{\"update_id\":1}"))
	h := newHookTarget(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		code := h.post(body, hookSecret, true)
		switch {
		case !json.Valid(body) && code != http.StatusBadRequest:
			t.Fatalf("a body that is not JSON: %d, want 400", code)
		case json.Valid(body) && len(body) <= maxServerBody && code != http.StatusOK:
			t.Fatalf("a JSON body: %d, want 200", code)
		}
	})
}

// TestWebhookRefusesHostileBodies: bodies built to hurt get a 4xx and
// change nothing, through ship's server (bounded) and on the bare adapter.
func TestWebhookRefusesHostileBodies(t *testing.T) {
	valid := seedUpdates[0]
	// An unaddressed group message (logged, not run) from a user with a
	// 5 MB name: regexps over 5 MB of text take seconds under -race.
	huge := `{"update_id":500009,"message":{"message_id":17,"from":{"id":43,"is_bot":false,"first_name":"` +
		strings.Repeat("B", 5<<20) + `"},"chat":{"id":-1001234567890,"title":"Team","type":"supergroup"},"date":1767225607,"text":"just chatting"}}`
	badUTF8 := strings.Replace(valid, `"hello there"`, "\"hello \xff\xfe\xfd there\"", 1)
	cases := []struct {
		name   string
		body   string
		secret string
		// bareBug and bug describe a known failure of the bare adapter, or
		// of both variants: a variant that fails so is skipped (reported,
		// not fixed here). Delete the field once the adapter is fixed.
		bareBug, bug string
	}{
		{name: "forged secret", body: valid, secret: "guessed-secret"},
		{name: "no secret header", body: valid},
		{name: "100,000 [ without the secret", body: strings.Repeat("[", 100_000), secret: "nope"},
		{name: "100,000 [ with the secret", body: strings.Repeat("[", 100_000), secret: hookSecret},
		{name: "100,000 nested objects with the secret", body: strings.Repeat(`{"a":`, 100_000), secret: hookSecret},
		{name: "5 MB body without the secret", body: huge, secret: "nope"},
		{name: "5 MB update with the secret", body: huge, secret: hookSecret},
		{name: "5 MB of garbage with the secret", body: strings.Repeat("\x00", 5<<20), secret: hookSecret},
		{name: "invalid UTF-8 without the secret", body: badUTF8, secret: "nope"},
		{name: "invalid UTF-8 with the secret", body: badUTF8, secret: hookSecret},
		{name: "invalid UTF-8 outside strings", body: "{\"update_id\":1,\xff}", secret: hookSecret},
		{name: "truncated update", body: valid[:len(valid)/2], secret: hookSecret},
	}
	for _, c := range cases {
		for _, bounded := range []bool{true, false} {
			name := c.name + map[bool]string{true: " (ship's server)", false: " (bare adapter)"}[bounded]
			t.Run(name, func(t *testing.T) {
				h := newHookTarget(t)
				code := h.post([]byte(c.body), c.secret, bounded)
				keys, err := h.engine.ChatKeys(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				known := c.bug
				if !bounded && known == "" {
					known = c.bareBug
				}
				if ok := code >= 400 && code < 500 && len(keys) == 0; !ok && known != "" {
					t.Skipf("known bug: %s (got %d, chats %v)", known, code, keys)
				}
				if code < 400 || code >= 500 {
					t.Errorf("status %d, want a 4xx", code)
				}
				h.untouched(t, c.name)
			})
		}
	}
}
