package main_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
)

// TestE2EAgentProfileBoundToAGroup: a "coder" profile bound to a Telegram
// group answers there with its model, its prompt and its narrower tools;
// "/agent default …" hands one message to the default agent; /api/sse
// carries route_decided with the reason each time.
func TestE2EAgentProfileBoundToAGroup(t *testing.T) {
	const token = "4242:e2e-profiles-token"
	tg := startTelegram(t, token)
	fake := startFake(t, nil)
	dir := initProject(t)
	if err := os.MkdirAll(filepath.Join(dir, "agents"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agents", "coder.md"), []byte("You are the coder of this team.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addFastModel(t, dir)
	setConfig(t, dir, "agents", `{"coder": {
		"prompt": "agents/coder.md", "model": "fast",
		"tools": {"deny": ["memory_*"]}, "chats": ["telegram:chat:-100777*"]
	}}`)
	p := startShip(t, dir, modelEnv(fake, telegramEnv(tg, token)...))
	events := sseLines(t, p)

	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := tg.WaitPolling(ctx); err != nil {
		t.Fatalf("ship never long-polled: %v", err)
	}
	sends := 0
	say := func(text string) {
		t.Helper()
		tg.Push(tg.GroupText(-100777, 88, "bob", text))
		sends++
		if _, err := tg.WaitSent(ctx, sends); err != nil {
			t.Fatalf("waiting for the reply to %q: %v", text, err)
		}
	}
	say(tg.Mention() + " build the project")
	say("/agent@" + strings.TrimPrefix(tg.Mention(), "@") + " default what time is it")
	say(tg.Mention() + " and now")

	req := func(text string) fakeopenai.Request {
		t.Helper()
		for _, r := range fake.Requests() {
			if r.LastUser() == text {
				return r
			}
		}
		t.Fatalf("the model never saw %q", text)
		return fakeopenai.Request{}
	}
	system := func(r fakeopenai.Request) string {
		for _, m := range r.Messages {
			if m.Role == "system" {
				return m.Content
			}
		}
		return ""
	}
	coder, other, after := req("build the project"), req("what time is it"), req("and now")
	if coder.Model != "fast-model" || after.Model != "fast-model" || other.Model != "fake" {
		t.Errorf("models: bound %q, /agent default %q, next %q; want fast-model, fake, fast-model", coder.Model, other.Model, after.Model)
	}
	if !strings.Contains(system(coder), "You are the coder of this team.") || strings.Contains(system(other), "You are the coder") {
		t.Errorf("the coder's prompt: bound run has it %v, /agent default run has it %v",
			strings.Contains(system(coder), "You are the coder"), strings.Contains(system(other), "You are the coder"))
	}
	names := func(r fakeopenai.Request) []string {
		var out []string
		for _, tl := range r.Tools {
			out = append(out, tl.Name)
		}
		return out
	}
	if !other.HasTool("memory_write") {
		t.Fatalf("the default agent is not offered memory_write (tools %v): the test needs a tool the profile takes away", names(other))
	}
	if slices.ContainsFunc(names(coder), func(n string) bool { return strings.HasPrefix(n, "memory_") }) {
		t.Errorf("the coder denies memory_*, yet was offered %v", names(coder))
	}

	var decided []string
	within(t, hangGuard, "three route_decided events on /api/sse", func() bool {
		decided = decided[:0]
		for _, l := range events() {
			if data, ok := strings.CutPrefix(l, "data: "); ok && strings.Contains(data, `"route_decided"`) {
				var e struct{ Agent, Reason string }
				if err := json.Unmarshal([]byte(data), &e); err != nil {
					t.Fatalf("route_decided frame %s: %v", data, err)
				}
				decided = append(decided, e.Agent+" "+e.Reason)
			}
		}
		return len(decided) >= 3
	}, func() string { return strings.Join(decided, "; ") })
	want := []string{"coder bound:telegram:chat:-100777*", "default explicit", "coder bound:telegram:chat:-100777*"}
	if !slices.Equal(decided, want) {
		t.Errorf("route_decided: %q, want %q", decided, want)
	}
	if !strings.Contains(p.stderr.String(), `"reason":"explicit"`) {
		t.Errorf("the log has no route line with the reason")
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit status %d", code)
	}
}
