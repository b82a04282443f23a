package main_test

import (
	"context"
	"encoding/json"
	"strings"
	"syscall"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
)

// TestE2EContactSend: a Telegram user writes to the bot; later someone
// asks the agent, through the API, to message them: the message arrives in
// their private chat and is in that chat's log. In a group the tool is not
// offered.
func TestE2EContactSend(t *testing.T) {
	const token = "4242:e2e-contacts-token"
	tg := startTelegram(t, token)
	fake := startFake(t, fakeopenai.RunCommands)
	dir := initProject(t)
	p := startShip(t, dir, modelEnv(fake, telegramEnv(tg, token)...))
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()

	tg.Push(tg.PrivateText(77, "ann", "hi, I'm Ann"))
	if _, err := tg.WaitSent(ctx, 1); err != nil {
		t.Fatal(err)
	}
	res := p.mustExecute(t, "ops", "tell @Ann: the build is green")
	if !res.Success || len(res.Replies) != 1 || !strings.Contains(res.Replies[0], `"to":"telegram:77"`) {
		t.Fatalf("execute = %+v", res)
	}
	sent, err := tg.WaitSent(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if s := sent[1]; s.ChatID != 77 || s.Text != "the build is green" {
		t.Errorf("ann got %+v", s)
	}
	var msgs struct {
		Messages []struct{ Role, Text string } `json:"messages"`
	}
	if err := json.Unmarshal(p.do(t, "GET", "/api/chats/telegram:chat:77/messages", "").body, &msgs); err != nil {
		t.Fatal(err)
	}
	if last := msgs.Messages[len(msgs.Messages)-1]; last.Role != "assistant" || last.Text != "the build is green" {
		t.Errorf("ann's chat log ends with %+v", last)
	}

	// In a group, messaging other people is off unless the policy allows it.
	tg.Push(tg.GroupText(-100500, 88, "bob", tg.Mention()+" tell ann: psst"))
	// The group's reply is streamed (sent, then edited): read what it shows.
	if err := tg.Wait(ctx, func() bool {
		shown := tg.Shown()
		return len(shown) == 3 && shown[2].ChatID == -100500 && shown[2].Text == "no contacts"
	}); err != nil {
		t.Errorf("group got %+v: %v", tg.Shown(), err)
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
}
