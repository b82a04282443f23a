package telegram_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/shipmyagent/ship/adapters/telegram"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/faketelegram"
	"github.com/shipmyagent/ship/runtime/chat"
)

func TestPrivateMessageIsAnswered(t *testing.T) {
	e := newEnv(t, setup{})
	e.tg.Push(e.tg.PrivateText(42, "ann", "hello bot"))
	sent := e.waitSent(1)
	s := sent[0]
	if s.ChatID != 42 || s.Text != "echo: hello bot" || s.ThreadID != 0 || s.ReplyTo != 0 {
		t.Fatalf("sent %+v, want a plain reply in chat 42", s)
	}
	e.idle()
	es := e.entries("telegram:chat:42")
	if len(es) != 2 || es[0].Role != chat.RoleUser || es[0].UserID != "42" || es[0].MessageID == "" ||
		es[1].Role != chat.RoleAssistant || es[1].Text != "echo: hello bot" {
		t.Errorf("chat log = %+v", es)
	}
}

func TestGroupAnswersOnlyWhenAddressedAndStripsTheMention(t *testing.T) {
	e := newEnv(t, setup{})
	const group = -1001
	e.tg.Push(e.tg.GroupText(group, 7, "bob", "just chatting among ourselves"))
	e.tg.Push(e.tg.GroupText(group, 7, "bob", e.tg.Mention()+" what is 2+2?"))
	sent := e.waitSent(1)
	if sent[0].Text != "echo: what is 2+2?" || sent[0].ChatID != group {
		t.Fatalf("sent %+v", sent[0])
	}
	e.idle() // the reply's log entry is written after Telegram took it
	// The reply quotes the triggering message.
	var trigger int64
	es := e.entries("telegram:chat:-1001")
	for _, en := range es {
		if en.Role == chat.RoleUser && strings.Contains(en.Text, "2+2") {
			fmt.Sscan(en.MessageID, &trigger)
		}
	}
	if sent[0].ReplyTo == 0 || sent[0].ReplyTo != trigger {
		t.Errorf("reply_to = %d, want the trigger %d", sent[0].ReplyTo, trigger)
	}
	// Both messages are in the log; only the addressed one ran.
	if len(es) != 3 || es[0].Text != "just chatting among ourselves" || es[1].Text != "what is 2+2?" {
		t.Errorf("chat log = %+v", es)
	}
	if n := e.model.RequestCount(); n != 1 {
		t.Errorf("model called %d times, want 1", n)
	}
	if last := e.model.Requests()[0].LastUser(); last != "what is 2+2?" {
		t.Errorf("model saw %q, want the text without the mention", last)
	}
	// A reply to the bot's message counts as addressed.
	reply := e.tg.GroupText(group, 7, "bob", "and times 3?")
	reply["message"].(map[string]any)["reply_to_message"] = map[string]any{
		"message_id": sent[0].MessageID, "from": map[string]any{"id": 1000, "is_bot": true, "first_name": "ship"},
		"chat": map[string]any{"id": group, "type": "supergroup"}, "date": 1, "text": sent[0].Text,
	}
	e.tg.Push(reply)
	if got := e.waitSent(2)[1].Text; got != "echo: and times 3?" {
		t.Errorf("reply to the bot answered with %q", got)
	}
}

func TestForumTopicsHaveTheirOwnHistoryAndReplies(t *testing.T) {
	e := newEnv(t, setup{})
	const forum = -100500
	e.tg.Push(e.tg.TopicText(forum, 11, 7, "bob", e.tg.Mention()+" alpha one"))
	e.waitSent(1)
	e.tg.Push(e.tg.TopicText(forum, 22, 8, "eve", e.tg.Mention()+" beta one"))
	e.waitSent(2)
	e.tg.Push(e.tg.TopicText(forum, 11, 7, "bob", e.tg.Mention()+" alpha two"))
	sent := e.waitSent(3)

	for i, want := range []struct {
		thread int64
		text   string
	}{{11, "echo: alpha one"}, {22, "echo: beta one"}, {11, "echo: alpha two"}} {
		s := sent[i]
		if s.ThreadID != want.thread || s.Text != want.text || s.ReplyTo == 0 || s.ReplyTo == want.thread {
			t.Errorf("reply %d = thread %d reply_to %d %q; want thread %d, a reply to the trigger (not the topic start), %q",
				i, s.ThreadID, s.ReplyTo, s.Text, want.thread, want.text)
		}
	}
	// Topic 11's second prompt has its first turn and nothing of topic 22.
	prompt := fmt.Sprint(e.model.Requests()[2].Messages)
	if !strings.Contains(prompt, "alpha one") || strings.Contains(prompt, "beta") {
		t.Errorf("topic 11 prompt: %s", prompt)
	}
	e.idle()
	if len(e.entries("telegram:chat:-100500:topic:11")) != 4 || len(e.entries("telegram:chat:-100500:topic:22")) != 2 {
		t.Error("topics do not have separate chat logs")
	}
	// Messages in a topic point at the topic's creation message: that is
	// not a reply to the bot, so without a mention nothing is answered.
	e.tg.Push(e.tg.TopicText(forum, 11, 7, "bob", "people talking in the topic"))
	e.tg.Push(e.tg.TopicText(forum, 11, 7, "bob", e.tg.Mention()+" last"))
	if got := e.waitSent(4)[3].Text; got != "echo: last" {
		t.Errorf("4th reply %q: the unaddressed topic message was answered", got)
	}
}

// longCodeReply is a model answer of about 9,000 characters whose Go code
// block cannot fit in the message it starts in.
func longCodeReply() string {
	var long strings.Builder
	for long.Len() < 6000 {
		long.WriteString("Some **explanation** of the code that follows, line by line.\n\n")
	}
	long.WriteString("```go\n")
	for i := 0; long.Len() < 9000; i++ {
		fmt.Fprintf(&long, "fmt.Println(%d) // a line of code in the block\n", i)
	}
	long.WriteString("```\nThat is all.")
	return long.String()
}

// chatSendModel answers every prompt by calling chat_send with reply.
func chatSendModel(reply string) fakeopenai.Handler {
	return func(r fakeopenai.Request) fakeopenai.Response {
		if len(r.ToolResults()) > 0 {
			return fakeopenai.Response{}
		}
		b, _ := json.Marshal(map[string]string{"text": reply})
		return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: "chat_send", Arguments: string(b)}}}
	}
}

// TestLongReplyIsFormattedAndSplit: a long Markdown reply arrives as
// formatted messages (entities, no "**" or fences), each within Telegram's
// limit, and the code block cut between two messages is a Go code block
// in both.
func TestLongReplyIsFormattedAndSplit(t *testing.T) {
	e := newEnv(t, setup{model: chatSendModel(longCodeReply())})
	e.tg.Push(e.tg.PrivateText(5, "ann", "show me code"))
	sent := e.waitSent(3)
	goBlocks := 0
	for i, s := range sent {
		if n := len(utf16.Encode([]rune(s.Text))); n > telegram.MaxMessageChars || !utf8.ValidString(s.Text) {
			t.Errorf("part %d: %d UTF-16 units", i, n)
		}
		if strings.Contains(s.Text, "```") || strings.Contains(s.Text, "**") || s.ParseMode != "" {
			t.Errorf("part %d shows Markdown markers or uses parse_mode %q", i, s.ParseMode)
		}
		var ents []struct{ Type, Language string }
		if err := json.Unmarshal([]byte(s.Params["entities"]), &ents); err != nil || len(ents) == 0 {
			t.Fatalf("part %d: entities %q: %v", i, s.Params["entities"], err)
		}
		for _, en := range ents {
			if en.Type == "pre" && en.Language == "go" {
				goBlocks++
			}
		}
	}
	if goBlocks < 2 {
		t.Errorf("the code block is a go pre block in %d parts, want the 2 it spans", goBlocks)
	}
	if got := len(e.tg.Sent()); got != 3 {
		t.Errorf("%d parts, want 3", got)
	}
}

// TestParseModeKeepsMarkdownAsWritten: with parse_mode configured, the
// escape hatch, replies go out as the model wrote them, fences balanced.
func TestParseModeKeepsMarkdownAsWritten(t *testing.T) {
	e := newEnv(t, setup{model: chatSendModel(longCodeReply()),
		opts: func(o *telegram.Options) { o.ParseMode = "Markdown" }})
	e.tg.Push(e.tg.PrivateText(5, "ann", "show me code"))
	sent := e.waitSent(3)
	for i, s := range sent {
		if strings.Count(s.Text, "```")%2 != 0 || s.Params["entities"] != "" {
			t.Errorf("part %d: unbalanced fences or entities sent:\n%s", i, s.Text)
		}
	}
	if !strings.HasPrefix(sent[2].Text, "```go") && !strings.HasPrefix(sent[1].Text, "```go") {
		t.Error("the continued code block does not reopen with its language")
	}
}

func TestFloodControlPausesTheChatThenDelivers(t *testing.T) {
	e := newEnv(t, setup{})
	e.tg.FailNext("sendMessage", 1, faketelegram.Failure{ErrorCode: 429, RetryAfter: 1})
	start := time.Now()
	e.tg.Push(e.tg.PrivateText(9, "ann", "hi"))
	sent := e.waitSent(1)
	if sent[0].Text != "echo: hi" {
		t.Fatalf("sent %+v", sent[0])
	}
	if calls := e.tg.Calls("sendMessage"); calls != 2 {
		t.Errorf("sendMessage called %d times, want the refused one and the retry", calls)
	}
	// retry_after is a promise not to send for that long: a lower bound.
	if waited := sent[0].At.Sub(start); waited < time.Second {
		t.Errorf("resent after %s, before retry_after (1 s) passed", waited)
	}
}

func TestForbiddenIsNotRetriedAndReportedToTheModel(t *testing.T) {
	e := newEnv(t, setup{})
	e.tg.FailNext("sendMessage", 1, faketelegram.Failure{ErrorCode: 403, Description: "Forbidden: bot was blocked by the user"})
	e.tg.Push(e.tg.PrivateText(9, "ann", "hi"))
	e.waitModelCalls(2)
	if calls := e.tg.Calls("sendMessage"); calls != 1 {
		t.Errorf("sendMessage called %d times, want 1: a 403 is final", calls)
	}
	for _, en := range e.entries("telegram:chat:9") {
		if en.Role == chat.RoleAssistant {
			t.Errorf("a refused reply is logged as delivered: %q", en.Text)
		}
	}
	reqs := e.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model called %d times, want 2", len(reqs))
	}
	res := reqs[1].ToolResults()
	if len(res) != 1 || !strings.Contains(res[0].Content, `"success":false`) || !strings.Contains(res[0].Content, "blocked") {
		t.Errorf("chat_send told the model %+v, want the truth", res)
	}
}

func TestWebhookChecksTheSecret(t *testing.T) {
	srv, route := newWebhookServer(t)
	e := newEnv(t, setup{mode: telegram.ModeWebhook, noStart: true, opts: func(o *telegram.Options) {
		o.WebhookSecret = "s3cret-s3cret"
		o.WebhookURL = srv.URL // the "public" address is the test server
	}})
	route(e.adapter)
	e.start()
	url, secret := waitWebhook(t, e.tg)
	if url != srv.URL+telegram.WebhookPath || secret != "s3cret-s3cret" {
		t.Fatalf("setWebhook got %q %q", url, secret)
	}

	forged, _ := json.Marshal(e.tg.PrivateText(3, "mallory", "forged"))
	for _, header := range []string{"", "wrong"} {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(string(forged)))
		if header != "" {
			req.Header.Set("X-Telegram-Bot-Api-Secret-Token", header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("secret %q: status %d, want 401", header, resp.StatusCode)
		}
	}
	if es := e.entries("telegram:chat:3"); len(es) != 0 {
		t.Fatalf("a forged update changed the log: %+v", es)
	}
	status, err := e.tg.DeliverWebhook(e.ctx(), e.tg.PrivateText(4, "ann", "real one"))
	if err != nil || status != http.StatusOK {
		t.Fatalf("genuine webhook: %d %v", status, err)
	}
	if got := e.waitSent(1)[0].Text; got != "echo: real one" {
		t.Errorf("webhook reply %q", got)
	}
}

func TestBadTokenStopsWithAClearErrorWithoutTheToken(t *testing.T) {
	e := newEnv(t, setup{noStart: true, opts: func(o *telegram.Options) { o.Token = "999:wrong-secret-token" }})
	err := e.adapter.Run(e.ctx())
	if err == nil || !strings.Contains(err.Error(), "TELEGRAM_BOT_TOKEN") || strings.Contains(err.Error(), "wrong-secret-token") {
		t.Fatalf("err = %v", err)
	}
	if st := e.adapter.Status(); st.State != "failed" || strings.Contains(st.Detail, "wrong-secret-token") {
		t.Errorf("status %+v", st)
	}
}
