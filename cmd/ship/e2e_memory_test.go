package main_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
)

// rememberer is the model of the notes test: "remember TEXT" calls
// memory_write on the chat's notes, a tool result is reported with
// chat_send, and anything else is echoed.
func rememberer(r fakeopenai.Request) fakeopenai.Response {
	rest, remember := strings.CutPrefix(r.LastUser(), "remember ")
	if !remember || len(r.ToolResults()) > 0 {
		return fakeopenai.RunCommands(r)
	}
	args, _ := json.Marshal(map[string]string{"notes": "chat", "text": "- " + rest})
	return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: "memory_write", Arguments: string(args)}}}
}

// TestE2ENotes: a Telegram user asks ship to remember something; it is a
// plain Markdown file under .ship/memory that a person edits by hand;
// /memory shows the edited notes, the chat's next prompt carries them,
// and a group's prompt never does.
func TestE2ENotes(t *testing.T) {
	const token = "4242:e2e-notes-token"
	tg := startTelegram(t, token)
	fake := startFake(t, rememberer)
	dir := initProject(t)
	p := startShip(t, dir, modelEnv(fake, telegramEnv(tg, token)...))
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()

	tg.Push(tg.PrivateText(77, "ann", "remember the release train leaves on Thursdays"))
	sent, err := tg.WaitSent(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sent[0].Text, `"success":true`) {
		t.Fatalf("memory_write did not succeed: %q", sent[0].Text)
	}
	path := filepath.Join(dir, ".ship", "memory", "chats", "telegram_chat_77.md")
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "- the release train leaves on Thursdays\n" {
		t.Fatalf("notes file: %q %v", b, err)
	}
	if err := os.WriteFile(path, append(b, []byte("- hotfixes go out any day (edited by hand)\n")...), 0o644); err != nil {
		t.Fatal(err)
	}

	tg.Push(tg.PrivateText(77, "ann", "/memory"))
	if sent, err = tg.WaitSent(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if got := sent[1].Text; !strings.Contains(got, "Thursdays") || !strings.Contains(got, "edited by hand") {
		t.Fatalf("/memory shows %q", got)
	}

	tg.Push(tg.PrivateText(77, "ann", "when does it leave?"))
	tg.Push(tg.GroupText(-100500, 88, "bob", tg.Mention()+" when does it leave in the group?"))
	if err := tg.Wait(ctx, func() bool { return len(tg.Shown()) >= 4 }); err != nil {
		t.Fatalf("not answered: %v (%d model requests)", err, fake.RequestCount())
	}
	checked := 0
	for _, r := range fake.Requests() {
		system := r.Messages[0].Content
		switch {
		case strings.HasPrefix(r.LastUser(), "when does it leave?"):
			checked++
			if !strings.Contains(system, "edited by hand") {
				t.Errorf("the private chat's prompt lacks the edited notes:\n%s", system)
			}
		case strings.Contains(r.LastUser(), "in the group"):
			checked++
			if strings.Contains(string(r.Body), "Thursdays") {
				t.Errorf("the group's request carries the private chat's notes")
			}
		}
	}
	if checked < 2 {
		t.Errorf("found %d of the two questions' model requests", checked)
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
}
