package main_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/faketelegram"
)

// filesModel scripts the model of TestE2EFilesAndQuestionsInATelegramTopic:
// "chart" draws a PNG with exec_shell and sends it with chat_send_file;
// "passwd" tries to send /etc/passwd and reports the tool's answer; "ask"
// asks a question with three choices; an answer is acknowledged; anything
// else is echoed.
func filesModel(png []byte) fakeopenai.Handler {
	call := func(name string, args any) fakeopenai.Response {
		raw, _ := json.Marshal(args) // maps of strings and slices always encode
		return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: name, Arguments: string(raw)}}}
	}
	say := func(text string) fakeopenai.Response { return call("chat_send", map[string]string{"text": text}) }
	return func(r fakeopenai.Request) fakeopenai.Response {
		last, result := lastToolCall(r)
		user := r.LastUser()
		switch {
		case last == "chat_send":
			return fakeopenai.Response{}
		case strings.Contains(user, "answered your question"):
			return say("ack: " + user)
		case strings.Contains(user, "chart"):
			switch last {
			case "":
				return call("exec_shell", map[string]string{
					"command": "printf '%s' " + base64.StdEncoding.EncodeToString(png) + " | base64 -d > chart.png"})
			case "exec_shell":
				return call("chat_send_file", map[string]any{"paths": []string{"chart.png"}, "caption": "**Sales** by month"})
			}
			return fakeopenai.Response{}
		case strings.Contains(user, "passwd"):
			if last == "" {
				return call("chat_send_file", map[string]any{"paths": []string{"/etc/passwd"}})
			}
			return say("result: " + result)
		case strings.Contains(user, "ask"):
			if last == "" {
				return call("chat_ask", map[string]any{"question": "Deploy **where**?",
					"choices": []string{"staging", "production", "nowhere"}})
			}
			return fakeopenai.Response{}
		}
		return say("echo: " + user)
	}
}

// lastToolCall is the name of the last tool called after the last user
// message and the content of its result ("" when none was).
func lastToolCall(r fakeopenai.Request) (name, result string) {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		switch m := r.Messages[i]; {
		case m.Role == "user":
			return name, result
		case m.Role == "tool" && result == "" && name == "":
			result = m.Content
		case m.Role == "assistant" && len(m.ToolCalls) > 0 && name == "":
			name = m.ToolCalls[len(m.ToolCalls)-1].Name
		}
	}
	return name, result
}

// TestE2EFilesAndQuestionsInATelegramTopic runs the real binary against the
// Telegram fake and a scripted model: a PNG that exec_shell made reaches
// the forum topic as a photo (a reply to the ask, with its caption
// formatted) and the chat log keeps its file_id; a path outside the
// project is refused with the reason and nothing is sent; a question with
// three choices shows its buttons in the topic, the asked person's tap
// answers it once (one new turn, the buttons removed), and another tap
// starts nothing.
func TestE2EFilesAndQuestionsInATelegramTopic(t *testing.T) {
	const token = "4242:e2e-files-token"
	const group, topic = int64(-100930), int64(9)
	png := faketelegram.PNG(64, 48)
	tg := startTelegram(t, token)
	fake := startFake(t, filesModel(png))
	dir := initProject(t)
	setTools(t, dir, `{"exec": {"enabled": true}, "allow": ["exec_shell"]}`)
	p := startShip(t, dir, modelEnv(fake, telegramEnv(tg, token)...))

	ctx, cancel := context.WithTimeout(context.Background(), 4*hangGuard)
	defer cancel()
	inTopic := func(s faketelegram.Sent) bool { return s.ChatID == group && s.ThreadID == topic }
	waitShown := func(what string, ok func(faketelegram.Sent) bool) faketelegram.Sent {
		t.Helper()
		var found faketelegram.Sent
		if err := tg.Wait(ctx, func() bool {
			for _, s := range tg.Shown() {
				if inTopic(s) && ok(s) {
					found = s
					return true
				}
			}
			return false
		}); err != nil {
			t.Fatalf("waiting for %s: %v; shown: %+v", what, err, tg.Shown())
		}
		return found
	}
	ask := func(text string) int64 {
		u := tg.TopicText(group, topic, 1001, "alice", tg.Mention()+" "+text)
		tg.Push(u)
		var id int64
		_ = json.Unmarshal([]byte(fmt.Sprint(u["message"].(map[string]any)["message_id"])), &id)
		return id
	}

	// The chart: made by the shell, sent as a photo into the topic.
	chartAsk := ask("draw the chart")
	var photo faketelegram.SentFile
	if err := tg.Wait(ctx, func() bool {
		files := tg.SentFiles()
		if len(files) > 0 {
			photo = files[0]
		}
		return len(files) > 0
	}); err != nil {
		t.Fatalf("no file sent: %v; shown %+v", err, tg.Shown())
	}
	if photo.Method != "sendPhoto" || photo.ChatID != group || photo.ThreadID != topic || photo.ReplyTo != chartAsk ||
		!bytes.Equal(photo.Bytes, png) || photo.Caption != "Sales by month" ||
		photo.CaptionEntities != `[{"type":"bold","offset":0,"length":5}]` || !strings.HasSuffix(photo.FileName, "chart.png") {
		t.Errorf("sent %+v; want chart.png as a photo in topic %d replying to %d, caption with Sales in bold",
			photo, topic, chartAsk)
	}
	eventually(t, "the chat log naming the photo's file_id", func() bool {
		logs, _ := filepath.Glob(filepath.Join(dir, ".ship", "chats", "*.jsonl"))
		for _, l := range logs {
			if b, _ := os.ReadFile(l); bytes.Contains(b, []byte(`"`+photo.FileID+`"`)) {
				return true
			}
		}
		return false
	})

	// A path outside the project: refused with the reason, nothing sent.
	ask("send me /etc/passwd")
	refusal := waitShown("the refusal", func(s faketelegram.Sent) bool { return strings.HasPrefix(s.Text, "result: ") })
	if !strings.Contains(refusal.Text, "passwd") || !strings.Contains(refusal.Text, "outside") {
		t.Errorf("the model was told %q; want the path refused as outside the project", refusal.Text)
	}
	if n := len(tg.SentFiles()); n != 1 {
		t.Errorf("%d files sent, want only the chart", n)
	}

	// A question with three choices: buttons in the topic.
	ask("ask me where to deploy")
	q := waitShown("the question", func(s faketelegram.Sent) bool { return len(s.Buttons) > 0 })
	var datas []string
	for _, row := range q.Buttons {
		for _, b := range row {
			datas = append(datas, b.CallbackData)
		}
	}
	if !strings.Contains(q.Text, "Deploy where?") || len(datas) != 3 || !strings.HasPrefix(datas[1], "/answer ") {
		t.Fatalf("question %+v; want Deploy where? with three /answer buttons", q)
	}
	// Bob's app still shows the buttons when he taps, after alice.
	bobTap, err := tg.CallbackQuery(group, q.MessageID, 2002, "bob", datas[2])
	if err != nil {
		t.Fatal(err)
	}
	id, err := tg.Press(group, q.MessageID, 1001, "alice", datas[1])
	if err != nil {
		t.Fatal(err)
	}
	a, err := tg.WaitAnswered(ctx, id)
	if err != nil || a.Text != "Answered: production" {
		t.Fatalf("alice's tap answered %q (%v)", a.Text, err)
	}
	waitShown("the answer's turn", func(s faketelegram.Sent) bool {
		return strings.HasPrefix(s.Text, "ack: ") && strings.Contains(s.Text, "production")
	})
	if err := tg.Wait(ctx, func() bool { m, _ := tg.Message(group, q.MessageID); return m.Buttons == nil }); err != nil {
		t.Errorf("the answered question keeps its buttons: %v", err)
	}
	tg.Push(bobTap)
	a, err = tg.WaitAnswered(ctx, bobTap["callback_query"].(map[string]any)["id"].(string))
	if err != nil || a.Text == "" || strings.HasPrefix(a.Text, "Answered:") {
		t.Errorf("bob's late tap answered %q (%v); want why nothing happened", a.Text, err)
	}
	// A message after the late tap is answered after anything it queued.
	ask("ping")
	waitShown("the echo", func(s faketelegram.Sent) bool {
		return s.Text == "echo: "+tg.Mention()+" ping" || s.Text == "echo: ping"
	})
	acks, turns := 0, 0
	for _, s := range tg.Shown() {
		if strings.HasPrefix(s.Text, "ack: ") {
			acks++
		}
	}
	for _, r := range fake.Requests() {
		if strings.Contains(r.LastUser(), "answered your question") && len(r.ToolResults()) == 0 {
			turns++
		}
	}
	if acks != 1 || turns != 1 {
		t.Errorf("the answer started %d turns and %d acknowledgements, want 1 and 1", turns, acks)
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
}
