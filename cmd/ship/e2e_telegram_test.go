package main_test

import (
	"context"
	"encoding/json"
	"strings"
	"syscall"
	"testing"

	"github.com/shipmyagent/ship/internal/faketelegram"
)

// TestE2ETelegram is the README's Telegram section as a new user runs it:
// the bot token and the Bot API base in the environment, nothing else.
func TestE2ETelegram(t *testing.T) {
	const token = "4242:e2e-telegram-token"
	tg := startTelegram(t, token)
	fake := startFake(t, nil)
	dir := initProject(t)
	p := startShip(t, dir, modelEnv(fake, telegramEnv(tg, token)...))

	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := tg.WaitPolling(ctx); err != nil {
		t.Fatalf("ship never long-polled: %v", err)
	}
	tg.Push(tg.PrivateText(77, "ann", "hi from telegram"))
	tg.Push(tg.TopicText(-100900, 5, 78, "bob", tg.Mention()+" hi from a topic"))
	// The topic's reply is streamed: sent, then edited to its final text.
	got := map[string]faketelegram.Sent{}
	var sent []faketelegram.Sent
	err := tg.Wait(ctx, func() bool {
		sent = tg.Shown()
		for _, s := range sent {
			got[s.Text] = s
		}
		_, a := got["echo: hi from telegram"]
		_, b := got["echo: hi from a topic"]
		return a && b
	})
	if err != nil {
		t.Fatalf("waiting for replies: %v; shown: %+v", err, sent)
	}
	if s, ok := got["echo: hi from telegram"]; !ok || s.ChatID != 77 {
		t.Errorf("private reply missing: %+v", sent)
	}
	if s, ok := got["echo: hi from a topic"]; !ok || s.ChatID != -100900 || s.ThreadID != 5 || s.ReplyTo == 0 {
		t.Errorf("topic reply missing or misrouted: %+v", sent)
	}

	var status struct {
		Adapters []struct{ Name, State string } `json:"adapters"`
	}
	if err := json.Unmarshal(p.do(t, "GET", "/api/status", "").body, &status); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fmtAdapters(status.Adapters), "telegram:running") {
		t.Errorf("/api/status adapters = %+v", status.Adapters)
	}

	// SIGTERM ends the held long poll: ship exits 0 (stop's hang guard
	// is the 10 s a service manager allows).
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
	for _, out := range []string{p.stdout.String(), p.stderr.String()} {
		if strings.Contains(out, token) {
			t.Error("the bot token appears in ship's output")
		}
	}
}

func fmtAdapters(as []struct{ Name, State string }) string {
	var parts []string
	for _, a := range as {
		parts = append(parts, a.Name+":"+a.State)
	}
	return strings.Join(parts, " ")
}
