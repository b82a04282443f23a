package faketelegram

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

const testToken = "123456:TEST-token_abc"

// start runs a fake and a real tgbotapi client against it.
func start(t *testing.T) (*Server, *tgbotapi.BotAPI) {
	t.Helper()
	return startWith(t, Options{Token: testToken})
}

// startWith is start with the fake's options.
func startWith(t *testing.T, opts Options) (*Server, *tgbotapi.BotAPI) {
	t.Helper()
	s, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	bot, err := tgbotapi.NewBotAPIWithClient(testToken, s.URL()+"/bot%s/%s", &http.Client{})
	if err != nil {
		t.Fatal(err)
	}
	return s, bot
}

// guard is a hang guard, never a timing assertion.
func guard(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// tgErr extracts the client's *tgbotapi.Error.
func tgErr(t *testing.T, err error) *tgbotapi.Error {
	t.Helper()
	var e *tgbotapi.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *tgbotapi.Error", err, err)
	}
	return e
}

func getUpdates(t *testing.T, bot *tgbotapi.BotAPI, p tgbotapi.Params) ([]json.RawMessage, []tgbotapi.Update) {
	t.Helper()
	resp, err := bot.MakeRequest("getUpdates", p)
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Result) == "null" {
		t.Fatal("getUpdates result is null, want an array")
	}
	var raws []json.RawMessage
	var ups []tgbotapi.Update
	if err := json.Unmarshal(resp.Result, &raws); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(resp.Result, &ups); err != nil {
		t.Fatal(err)
	}
	return raws, ups
}

func TestGetMeAndWrongToken(t *testing.T) {
	s, bot := start(t)
	if bot.Self.ID != 1000 || bot.Self.UserName != "ship_test_bot" || !bot.Self.IsBot || !bot.Self.CanJoinGroups {
		t.Fatalf("Self = %+v", bot.Self)
	}
	if s.Mention() != "@ship_test_bot" || s.Calls("getMe") != 1 || s.Calls("GETME") != 1 {
		t.Fatalf("Mention %q, Calls %d", s.Mention(), s.Calls("getMe"))
	}
	_, err := tgbotapi.NewBotAPIWithClient("999:wrong", s.URL()+"/bot%s/%s", &http.Client{})
	if e := tgErr(t, err); e.Code != 401 || e.Message != "Unauthorized" {
		t.Fatalf("wrong token: %+v", e)
	}
	if s.Calls("getMe") != 2 {
		t.Fatalf("Calls(getMe) = %d, want 2 (wrong tokens count)", s.Calls("getMe"))
	}
}

func TestGetUpdatesDeliversAndConfirms(t *testing.T) {
	s, bot := start(t)
	id1 := s.Push(s.PrivateText(42, "alice", "hello "+s.Mention()+" /start"))
	id2 := s.Push(s.GroupText(-100123, 43, "bob", "hi all"))
	if id2 != id1+1 {
		t.Fatalf("update ids %d, %d", id1, id2)
	}
	raws, ups := getUpdates(t, bot, tgbotapi.Params{"offset": "0", "timeout": "1"})
	if len(raws) != 2 || len(ups) != 2 {
		t.Fatalf("got %d updates", len(ups))
	}
	m := ups[0].Message
	if ups[0].UpdateID != int(id1) || m.Text != "hello @ship_test_bot /start" || m.From.UserName != "alice" ||
		m.Chat.ID != 42 || m.Chat.Type != "private" || m.MessageID != 1 {
		t.Fatalf("first update %+v / %+v", ups[0], m)
	}
	if len(m.Entities) != 2 || m.Entities[0].Type != "mention" || m.Entities[0].Offset != 6 ||
		m.Entities[0].Length != 14 || m.Entities[1].Type != "bot_command" || m.Entities[1].Length != 6 {
		t.Fatalf("entities %+v", m.Entities)
	}
	if !bot.IsMessageToMe(*m) || ups[1].Message.Chat.Type != "supergroup" || ups[1].Message.From.ID != 43 {
		t.Fatalf("second update %+v", ups[1].Message)
	}
	// Not confirmed yet: asked again, both come back.
	if raws, _ := getUpdates(t, bot, tgbotapi.Params{"timeout": "0"}); len(raws) != 2 {
		t.Fatalf("unconfirmed updates: %d", len(raws))
	}
	_, ups = getUpdates(t, bot, tgbotapi.Params{"offset": itoa(id1 + 1), "limit": "5"})
	if len(ups) != 1 || ups[0].UpdateID != int(id2) {
		t.Fatalf("after confirming the first: %+v", ups)
	}
	if raws, _ := getUpdates(t, bot, tgbotapi.Params{"offset": itoa(id2 + 1)}); len(raws) != 0 {
		t.Fatalf("after confirming both: %d", len(raws))
	}
	if raws, _ := getUpdates(t, bot, tgbotapi.Params{"offset": "0"}); len(raws) != 0 {
		t.Fatal("confirmed updates came back")
	}
	for range 3 {
		s.Push(s.PrivateText(42, "alice", "more"))
	}
	if raws, _ := getUpdates(t, bot, tgbotapi.Params{"limit": "2"}); len(raws) != 2 {
		t.Fatalf("limit 2 gave %d", len(raws))
	}
	if raws, _ := getUpdates(t, bot, tgbotapi.Params{"offset": "-1"}); len(raws) != 1 {
		t.Fatalf("offset -1 gave %d", len(raws))
	}
}

func TestGetUpdatesHoldsUntilPush(t *testing.T) {
	s, bot := start(t)
	ctx := guard(t)
	type result struct {
		ups []tgbotapi.Update
		err error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := bot.MakeRequest("getUpdates", tgbotapi.Params{"timeout": "30"})
		var r result
		if r.err = err; err == nil {
			r.err = json.Unmarshal(resp.Result, &r.ups)
		}
		done <- r
	}()
	if err := s.WaitPolling(ctx); err != nil {
		t.Fatal(err)
	}
	id := s.Push(s.PrivateText(7, "carol", "wake up"))
	select {
	case r := <-done:
		if r.err != nil || len(r.ups) != 1 || r.ups[0].UpdateID != int(id) || r.ups[0].Message.Text != "wake up" {
			t.Fatalf("held getUpdates returned %+v, %v", r.ups, r.err)
		}
	case <-ctx.Done():
		t.Fatal("held getUpdates was not released by Push")
	}
}

func TestGetUpdatesEmptyAfterTimeout(t *testing.T) {
	_, bot := start(t)
	if raws, _ := getUpdates(t, bot, tgbotapi.Params{"timeout": "1"}); len(raws) != 0 {
		t.Fatalf("got %d updates", len(raws))
	}
}

func TestGetUpdatesConflictAndClose(t *testing.T) {
	s, bot := start(t)
	ctx := guard(t)
	poll := func() chan error {
		ch := make(chan error, 1)
		go func() {
			_, err := bot.MakeRequest("getUpdates", tgbotapi.Params{"timeout": "30"})
			ch <- err
		}()
		return ch
	}
	first := poll()
	if err := s.WaitPolling(ctx); err != nil {
		t.Fatal(err)
	}
	second := poll()
	select {
	case err := <-first:
		if e := tgErr(t, err); e.Code != 409 || !strings.HasPrefix(e.Message, "Conflict: terminated by other getUpdates request") {
			t.Fatalf("older getUpdates: %+v", e)
		}
	case <-ctx.Done():
		t.Fatal("older getUpdates was not terminated")
	}
	s.Close() // releases the second one
	select {
	case <-second:
	case <-ctx.Done():
		t.Fatal("Close did not release a held getUpdates")
	}
	if _, err := s.WaitSent(ctx, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("WaitSent after Close: %v", err)
	}
}

func TestSendMessageRecorded(t *testing.T) {
	s, bot := start(t)
	s.Push(s.PrivateText(42, "alice", "hi"))
	msg, err := bot.Send(tgbotapi.NewMessage(42, "hello back"))
	if err != nil {
		t.Fatal(err)
	}
	if msg.MessageID != 2 || msg.Chat.ID != 42 || msg.Chat.Type != "private" || msg.From.ID != 1000 ||
		!msg.From.IsBot || msg.Text != "hello back" || msg.Date == 0 {
		t.Fatalf("returned message %+v", msg)
	}
	sent, err := s.WaitSent(guard(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	got := sent[0]
	if got.Method != "sendMessage" || got.ChatID != 42 || got.Text != "hello back" || got.MessageID != 2 ||
		got.ThreadID != 0 || got.ReplyTo != 0 || got.Params["chat_id"] != "42" || got.At.IsZero() {
		t.Fatalf("Sent %+v", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if sent, err := s.WaitSent(ctx, 2); !errors.Is(err, context.Canceled) || len(sent) != 1 {
		t.Fatalf("WaitSent on a cancelled context: %d, %v", len(sent), err)
	}
}

func TestTopicsAndReplies(t *testing.T) {
	s, bot := start(t)
	u := s.TopicText(-1001, 7, 42, "alice", "question")
	s.Push(u)
	mid := u["message"].(map[string]any)["message_id"].(int64)
	if mid != 8 {
		t.Fatalf("topic message id %d, want 8 (after the creation message 7)", mid)
	}
	raws, ups := getUpdates(t, bot, nil)
	var topic struct {
		Message struct {
			MessageThreadID int64 `json:"message_thread_id"`
			IsTopicMessage  bool  `json:"is_topic_message"`
			ReplyTo         struct {
				MessageID         int64           `json:"message_id"`
				ForumTopicCreated json.RawMessage `json:"forum_topic_created"`
			} `json:"reply_to_message"`
		} `json:"message"`
	}
	if err := json.Unmarshal(raws[0], &topic); err != nil {
		t.Fatal(err)
	}
	if topic.Message.MessageThreadID != 7 || !topic.Message.IsTopicMessage || topic.Message.ReplyTo.MessageID != 7 ||
		len(topic.Message.ReplyTo.ForumTopicCreated) == 0 || ups[0].Message.ReplyToMessage.MessageID != 7 {
		t.Fatalf("topic update %s", raws[0])
	}

	resp, err := bot.MakeRequest("sendMessage", tgbotapi.Params{"chat_id": "-1001", "message_thread_id": "7",
		"text": "answer", "reply_to_message_id": "8"})
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		MessageID       int64 `json:"message_id"`
		MessageThreadID int64 `json:"message_thread_id"`
		IsTopicMessage  bool  `json:"is_topic_message"`
		ReplyTo         struct {
			MessageID int64  `json:"message_id"`
			Text      string `json:"text"`
		} `json:"reply_to_message"`
	}
	if err := json.Unmarshal(resp.Result, &out); err != nil {
		t.Fatal(err)
	}
	if out.MessageID != 9 || out.MessageThreadID != 7 || !out.IsTopicMessage || out.ReplyTo.MessageID != 8 ||
		out.ReplyTo.Text != "question" {
		t.Fatalf("sent into the topic: %s", resp.Result)
	}
	// Threaded without an explicit reply: the reply is the topic's creation message.
	resp, err = bot.MakeRequest("sendMessage", tgbotapi.Params{"chat_id": "-1001", "message_thread_id": "7", "text": "more"})
	if err != nil || json.Unmarshal(resp.Result, &out) != nil || out.ReplyTo.MessageID != 7 {
		t.Fatalf("threaded send: %v %s", err, resp.Result)
	}
	// Replying to a message that never existed fails, unless allowed.
	cfg := tgbotapi.NewMessage(-1001, "to nowhere")
	cfg.ReplyToMessageID = 999
	_, err = bot.Send(cfg)
	if e := tgErr(t, err); e.Code != 400 || e.Message != "Bad Request: message to be replied not found" {
		t.Fatalf("reply to a missing message: %+v", e)
	}
	cfg.AllowSendingWithoutReply = true
	if _, err := bot.Send(cfg); err != nil {
		t.Fatal(err)
	}
	// reply_parameters (JSON), here to a message the bot sent itself.
	if _, err := bot.MakeRequest("sendMessage", tgbotapi.Params{"chat_id": "-1001", "text": "re",
		"reply_parameters": `{"message_id":9}`}); err != nil {
		t.Fatal(err)
	}
	sent := s.Sent()
	if len(sent) != 4 || sent[0].ThreadID != 7 || sent[0].ReplyTo != 8 || sent[1].ReplyTo != 0 ||
		sent[2].ReplyTo != 999 || sent[3].ReplyTo != 9 {
		t.Fatalf("Sent %+v", sent)
	}
}

func TestFailNext(t *testing.T) {
	s, bot := start(t)
	s.FailNext("sendMessage", 1, Failure{ErrorCode: 429, RetryAfter: 3})
	_, err := bot.Send(tgbotapi.NewMessage(42, "x"))
	e := tgErr(t, err)
	if e.Code != 429 || e.RetryAfter != 3 || e.Message != "Too Many Requests: retry after 3" {
		t.Fatalf("429: %+v", e)
	}
	var byValue tgbotapi.Error
	if errors.As(err, &byValue) {
		t.Fatal("tgbotapi returned the error by value; the notes say pointer")
	}
	if _, err := bot.Send(tgbotapi.NewMessage(42, "x")); err != nil {
		t.Fatalf("second send: %v", err)
	}
	s.FailNext("SENDMESSAGE", 1, Failure{MigrateToChatID: -100999})
	_, err = bot.Send(tgbotapi.NewMessage(-5, "x"))
	if e := tgErr(t, err); e.Code != 400 || e.MigrateToChatID != -100999 ||
		e.Message != "Bad Request: group chat was upgraded to a supergroup chat" {
		t.Fatalf("migrate: %+v", e)
	}
	if s.Calls("sendMessage") != 3 || len(s.Sent()) != 1 {
		t.Fatalf("Calls %d, Sent %d", s.Calls("sendMessage"), len(s.Sent()))
	}
	// The HTTP status follows Status (default ErrorCode).
	s.FailNext("getMe", 1, Failure{Status: 502, ErrorCode: 502})
	resp, err := http.Get(s.URL() + "/bot" + testToken + "/getMe")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 502 || string(body) != `{"ok":false,"error_code":502,"description":"Bad Gateway"}` {
		t.Fatalf("502: %d %s", resp.StatusCode, body)
	}
}

func TestFailAlways(t *testing.T) {
	s, bot := start(t)
	s.FailAlways("sendMessage", 1, Failure{ErrorCode: 403})
	if _, err := bot.Send(tgbotapi.NewMessage(42, "first")); err != nil {
		t.Fatalf("the call before the failures began: %v", err)
	}
	for range 3 {
		_, err := bot.Send(tgbotapi.NewMessage(42, "x"))
		if e := tgErr(t, err); e.Code != 403 || e.Message != "Forbidden: bot was blocked by the user" {
			t.Fatalf("403: %+v", e)
		}
	}
	s.StopFailing("SENDMESSAGE")
	if _, err := bot.Send(tgbotapi.NewMessage(42, "again")); err != nil {
		t.Fatalf("after StopFailing: %v", err)
	}
	if n, f := len(s.Sent()), len(s.Failures()); n != 2 || f != 3 {
		t.Fatalf("Sent %d, Failures %d; want 2 and 3", n, f)
	}
}

func TestTextChecks(t *testing.T) {
	_, bot := start(t)
	send := func(text, mode string) (tgbotapi.Message, error) {
		cfg := tgbotapi.NewMessage(42, text)
		cfg.ParseMode = mode
		return bot.Send(cfg)
	}
	wantErr := func(text, mode, desc string) {
		t.Helper()
		_, err := send(text, mode)
		if e := tgErr(t, err); e.Code != 400 || e.Message != desc {
			t.Fatalf("%q (%s): %+v, want %q", text, mode, e, desc)
		}
	}
	wantErr("a.b", "MarkdownV2", `Bad Request: can't parse entities: Character '.' is reserved and must be escaped with the preceding '\'`)
	if msg, err := send(`*bold* a\.b`, "MarkdownV2"); err != nil || msg.Text != "bold a.b" {
		t.Fatalf("escaped MarkdownV2: %q %v", msg.Text, err)
	}
	wantErr("<b>x", "HTML", `Bad Request: can't parse entities: Can't find end tag corresponding to start tag "b"`)
	if msg, err := send("<b>x</b> AT&amp;T &lt;3", "HTML"); err != nil || msg.Text != "x AT&T <3" {
		t.Fatalf("HTML: %q %v", msg.Text, err)
	}
	wantErr("*x", "Markdown", "Bad Request: can't parse entities: Can't find end of the entity starting at byte offset 0")
	wantErr("x", "markdownv3", "Bad Request: unsupported parse_mode")
	wantErr(strings.Repeat("a", 4097), "", "Bad Request: message is too long")
	for _, ok := range []string{strings.Repeat("a", 4096), strings.Repeat("😀", 4096), "*" + strings.Repeat("a", 4096) + "*"} {
		mode := ""
		if ok[0] == '*' {
			mode = "MarkdownV2"
		}
		if _, err := send(ok, mode); err != nil {
			t.Fatalf("%d code points: %v", len([]rune(ok)), err)
		}
	}
	wantErr("", "", "Bad Request: message text is empty")
	wantErr(" \n ", "", "Bad Request: message text is empty")
	wantErr("\xff", "", "Bad Request: strings must be encoded in UTF-8")
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }
