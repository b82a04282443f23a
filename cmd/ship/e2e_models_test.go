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
	"github.com/shipmyagent/ship/internal/faketelegram"
)

// addFastModel adds the model "fast" (fast-model) to ship.json's
// llm.models.
func addFastModel(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, "ship.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	doc["llm"].(map[string]any)["models"] = map[string]any{"fast": map[string]any{"model": "fast-model"}}
	raw, _ = json.Marshal(doc)
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestE2EModelPerChat: `/model fast` in one Telegram chat changes the model
// the fake receives for that chat only, and the choice survives a restart.
func TestE2EModelPerChat(t *testing.T) {
	const token = "4242:e2e-models-token"
	tg := startTelegram(t, token)
	fake := startFake(t, nil)
	dir := initProject(t)
	// The operator adds a second model of the same service to ship.json;
	// it takes the provider, base URL and key of the default.
	addFastModel(t, dir)
	env := modelEnv(fake, telegramEnv(tg, token)...)
	p := startShip(t, dir, env)

	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := tg.WaitPolling(ctx); err != nil {
		t.Fatalf("ship never long-polled: %v", err)
	}
	say := func(user int64, text string, sends int) faketelegram.Sent {
		t.Helper()
		tg.Push(tg.PrivateText(user, "", text))
		sent, err := tg.WaitSent(ctx, sends)
		if err != nil {
			t.Fatalf("waiting for the reply to %q: %v", text, err)
		}
		return sent[len(sent)-1]
	}
	say(77, "ann before", 1)
	say(88, "bob before", 2)
	if reply := say(77, "/model fast", 3); reply.ChatID != 77 || !strings.Contains(reply.Text, "now uses fast (openai/fast-model)") {
		t.Fatalf("/model fast answered %+v", reply)
	}
	say(77, "ann after", 4)
	say(88, "bob after", 5)
	want := map[string]string{"ann before": "fake", "bob before": "fake", "ann after": "fast-model", "bob after": "fake"}
	for text, model := range want {
		if got := modelOf(t, fake, text); got != model {
			t.Errorf("%q reached the model as %q, want %q", text, got, model)
		}
	}
	models := p.do(t, "GET", "/api/models", "")
	if !strings.Contains(string(models.body), `"name":"fast"`) || strings.Contains(string(models.body), "test-key") {
		t.Errorf("/api/models = %s", models.body)
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit status %d", code)
	}

	p2 := startShip(t, dir, env)
	if err := tg.WaitPolling(ctx); err != nil {
		t.Fatalf("ship never long-polled after the restart: %v", err)
	}
	say(77, "ann after restart", 6)
	say(88, "bob after restart", 7)
	if got := modelOf(t, fake, "ann after restart"); got != "fast-model" {
		t.Errorf("after a restart ann's chat reached %q, want fast-model", got)
	}
	if got := modelOf(t, fake, "bob after restart"); got != "fake" {
		t.Errorf("after a restart bob's chat reached %q, want fake", got)
	}
	if code := p2.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
}

// modelOf is the "model" of the fake's request that carried text.
func modelOf(t *testing.T, fake *fakeopenai.Server, text string) string {
	t.Helper()
	for _, r := range fake.Requests() {
		if r.LastUser() == text {
			return r.Model
		}
	}
	t.Fatalf("the model never saw %q", text)
	return ""
}
