package telegram_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/adapters/telegram"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/faketelegram"
)

func replyWith(text string) fakeopenai.Handler {
	return func(r fakeopenai.Request) fakeopenai.Response {
		if len(r.ToolResults()) > 0 {
			return fakeopenai.Response{}
		}
		b, _ := json.Marshal(map[string]string{"text": text})
		return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: "chat_send", Arguments: string(b)}}}
	}
}

func TestRefusedFormattingFallsBackToPlainText(t *testing.T) {
	e := newEnv(t, setup{
		model: replyWith("Version 2.0 is out! See *notes* (soon)."),
		opts:  func(o *telegram.Options) { o.ParseMode = "MarkdownV2" },
	})
	e.tg.Push(e.tg.PrivateText(3, "ann", "news?"))
	s := e.waitSent(1)[0]
	if s.Text != "Version 2.0 is out! See *notes* (soon)." || s.ParseMode != "" {
		t.Fatalf("sent %+v, want the text as plain text", s)
	}
	if n := e.tg.Calls("sendMessage"); n != 2 {
		t.Errorf("sendMessage called %d times, want the refused MarkdownV2 one and the plain one", n)
	}
}

func TestServerErrorsAreRetried(t *testing.T) {
	e := newEnv(t, setup{})
	e.tg.FailNext("sendMessage", 2, faketelegram.Failure{ErrorCode: 502, Description: "Bad Gateway"})
	e.tg.Push(e.tg.PrivateText(4, "ann", "are you there?"))
	if s := e.waitSent(1)[0]; s.Text != "echo: are you there?" {
		t.Fatalf("sent %+v", s)
	}
	if n := e.tg.Calls("sendMessage"); n != 3 {
		t.Errorf("sendMessage called %d times, want 2 failures + 1 success", n)
	}
}

func TestMigratedGroupGetsTheReplyInTheSupergroup(t *testing.T) {
	e := newEnv(t, setup{})
	e.tg.FailNext("sendMessage", 1, faketelegram.Failure{ErrorCode: 400, Description: "Bad Request: group chat was upgraded to a supergroup chat", MigrateToChatID: -1009999})
	e.tg.Push(e.tg.GroupText(-77, 7, "bob", e.tg.Mention()+" hello"))
	if s := e.waitSent(1)[0]; s.ChatID != -1009999 || s.Text != "echo: hello" {
		t.Fatalf("sent %+v, want the reply in the new supergroup", s)
	}
}

func TestAllowlistsIgnoreOthers(t *testing.T) {
	e := newEnv(t, setup{opts: func(o *telegram.Options) { o.AllowedUserIDs = []int64{10} }})
	e.tg.Push(e.tg.PrivateText(11, "stranger", "let me in"))
	e.tg.Push(e.tg.PrivateText(10, "friend", "hi"))
	if s := e.waitSent(1)[0]; s.ChatID != 10 {
		t.Fatalf("sent %+v", s)
	}
	e.idle()
	if len(e.tg.Sent()) != 1 || len(e.entries("telegram:chat:11")) != 0 {
		t.Error("a user outside the allowlist was answered or logged")
	}
}

func TestVoiceIsNamedAsSuch(t *testing.T) {
	e := newEnv(t, setup{})
	e.tg.AddFile("voice-1", "voice/file_2.oga", []byte("OggS voice"))
	u := e.tg.PrivateText(5, "ann", "")
	m := u["message"].(map[string]any)
	delete(m, "text")
	m["voice"] = map[string]any{"file_id": "voice-1", "file_unique_id": "v1", "duration": 4, "mime_type": "audio/ogg"}
	e.tg.Push(u)
	e.waitSent(1)
	if text := e.model.Requests()[0].LastUser(); !strings.HasPrefix(text, "[voice message (4 s), 10 bytes, saved at ") ||
		!strings.HasSuffix(text, "not transcribed: speech to text is not set up]") {
		t.Fatalf("model saw %q", text)
	}
}
