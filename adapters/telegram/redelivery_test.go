package telegram_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shipmyagent/ship/adapters/telegram"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/chat"
)

// A restart over the same .ship answers nothing twice, even when Telegram
// delivers the same message again, and answers what the crash left
// unanswered.
func TestRestartAnswersNothingTwice(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, setup{dir: dir})
	first := e.tg.PrivateText(50, "ann", "question before restart")
	e.tg.Push(first)
	e.waitSent(1)
	e.shutdown()

	// Next process, same folder, same Telegram. Telegram re-delivers the
	// answered message (as it does when the offset was not confirmed).
	e2 := newEnv(t, setup{dir: dir, tg: e.tg})
	e.tg.Push(first)
	e.tg.Push(e.tg.PrivateText(50, "ann", "question after restart"))
	sent := e2.waitSent(2)
	if sent[1].Text != "echo: question after restart" {
		t.Fatalf("after restart the bot sent %q", sent[1].Text)
	}
	if n := len(e.tg.Sent()); n != 2 {
		t.Errorf("%d replies in all, want 2: the re-delivered message was answered again", n)
	}
	users := 0
	for _, en := range e2.entries("telegram:chat:50") {
		if en.Role == chat.RoleUser {
			users++
		}
	}
	if users != 2 {
		t.Errorf("%d user entries, want 2: the re-delivery was logged twice", users)
	}
}

func TestMessageAcceptedBeforeACrashIsAnsweredOnce(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, setup{dir: dir, noStart: true})
	lost := e.tg.PrivateText(60, "ann", "accepted, then the power went out")
	m := lost["message"].(map[string]any)
	e.shutdown()
	// What a crash right after accepting leaves: the message in the log,
	// no reply, and the offset not confirmed.
	store, err := chat.OpenStore(chat.StoreOptions{Dir: filepath.Join(dir, ".ship", "chats"), Durability: chat.DurabilityNone})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Append(context.Background(), chat.ChatLogEntryV1{
		Channel: "telegram", ChatID: "60", ChatKey: "telegram:chat:60", UserID: "60",
		MessageID: "1", Role: chat.RoleUser, Text: m["text"].(string),
	}); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	e2 := newEnv(t, setup{dir: dir, tg: e.tg})
	e.tg.Push(lost)
	e.tg.Push(lost) // and once more for good measure
	e.tg.Push(e.tg.PrivateText(60, "ann", "next"))
	sent := e2.waitSent(2)
	if sent[0].Text != "echo: accepted, then the power went out" || sent[1].Text != "echo: next" {
		t.Fatalf("sent %q, %q", sent[0].Text, sent[1].Text)
	}
	e2.idle()
	if n := len(e.tg.Sent()); n != 2 {
		t.Errorf("%d replies, want 2", n)
	}
}

func TestCommandsAreAnsweredWithoutTheModel(t *testing.T) {
	e := newEnv(t, setup{})
	e.tg.Push(e.tg.PrivateText(70, "ann", "remember the word banana"))
	e.waitSent(1)
	e.tg.Push(e.tg.PrivateText(70, "ann", "/help"))
	if got := e.waitSent(2)[1].Text; !strings.Contains(got, "/clear") {
		t.Errorf("/help answered %q", got)
	}
	e.tg.Push(e.tg.PrivateText(70, "ann", "/status"))
	if got := e.waitSent(3)[2].Text; !strings.Contains(got, "fake/m") || !strings.Contains(got, "Queue") {
		t.Errorf("/status answered %q", got)
	}
	e.tg.Push(e.tg.PrivateText(70, "ann", "/clear"))
	e.waitSent(4)
	if n := e.model.RequestCount(); n != 1 {
		t.Errorf("commands reached the model: %d calls", n)
	}
	e.tg.Push(e.tg.PrivateText(70, "ann", "what word?"))
	e.waitSent(5)
	if prompt := e.model.Requests()[1].Messages; strings.Contains(fmtMessages(prompt), "banana") {
		t.Error("/clear did not forget the history")
	}
	// In a group, a command for another bot is none of ours.
	e.tg.Push(e.tg.GroupText(-5, 7, "bob", "/help@other_bot"))
	e.tg.Push(e.tg.GroupText(-5, 7, "bob", "/help@"+strings.TrimPrefix(e.tg.Mention(), "@")))
	if got := e.waitSent(6)[5]; got.ChatID != -5 || !strings.Contains(got.Text, "/clear") {
		t.Errorf("group /help@bot answered %+v", got)
	}
}

func fmtMessages(ms []fakeopenai.Message) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(m.Role + ":" + m.Content + "\n")
	}
	return b.String()
}

func TestOwnEditedAndServiceMessagesAreNotAnswered(t *testing.T) {
	e := newEnv(t, setup{})
	own := e.tg.PrivateText(80, "ann", "from the bot itself")
	own["message"].(map[string]any)["from"] = map[string]any{"id": 1000, "is_bot": true, "first_name": "ship"}
	e.tg.Push(own)
	edited := e.tg.PrivateText(80, "ann", "edited text")
	e.tg.Push(map[string]any{"edited_message": edited["message"]})
	joined := e.tg.GroupText(-9, 7, "bob", "")
	jm := joined["message"].(map[string]any)
	delete(jm, "text")
	jm["new_chat_members"] = []any{map[string]any{"id": 5, "is_bot": false, "first_name": "new"}}
	e.tg.Push(joined)
	e.tg.Push(e.tg.PrivateText(80, "ann", "a real question"))
	if got := e.waitSent(1)[0].Text; got != "echo: a real question" {
		t.Fatalf("first reply %q", got)
	}
	e.idle()
	if n := len(e.tg.Sent()); n != 1 {
		t.Errorf("%d replies, want 1", n)
	}
}

func TestPhotoIsDownloadedAndDescribed(t *testing.T) {
	e := newEnv(t, setup{})
	e.tg.AddFile("photo-1", "photos/file_1.jpg", []byte("\xff\xd8\xff jpeg bytes"))
	u := e.tg.PrivateText(90, "ann", "")
	m := u["message"].(map[string]any)
	delete(m, "text")
	m["caption"] = "what is in this picture?"
	m["photo"] = []any{map[string]any{"file_id": "photo-1", "file_unique_id": "u1", "width": 640, "height": 480, "file_size": 17}}
	e.tg.Push(u)
	e.waitSent(1)
	text := e.model.Requests()[0].LastUser()
	if !strings.Contains(text, "[photo (640x480), 14 bytes, saved at .ship/files/") || !strings.HasSuffix(text, "what is in this picture?") {
		t.Fatalf("model saw %q", text)
	}
	if strings.Contains(text, token) {
		t.Error("the file path leaks the token")
	}
}

func TestBusyNoteWhenAMessageWaits(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 4)
	e := newEnv(t, setup{
		model: func(r fakeopenai.Request) fakeopenai.Response {
			if len(r.ToolResults()) == 0 && r.LastUser() == "slow question" {
				started <- struct{}{}
				<-release
			}
			return fakeopenai.EchoChatSend(r)
		},
		opts: func(o *telegram.Options) { o.BusyNote, o.BusyAfter = true, time.Millisecond },
	})
	e.tg.Push(e.tg.PrivateText(1, "ann", "slow question"))
	<-started
	e.tg.Push(e.tg.PrivateText(2, "bob", "my turn?"))
	note := e.waitSent(1)[0]
	if note.ChatID != 2 || !strings.Contains(note.Text, "#1 in line") {
		t.Fatalf("first message sent: %+v, want a busy note to chat 2", note)
	}
	close(release)
	sent := e.waitSent(3)
	if sent[1].Text != "echo: slow question" || sent[2].Text != "echo: my turn?" {
		t.Errorf("answers: %q, %q", sent[1].Text, sent[2].Text)
	}
}
