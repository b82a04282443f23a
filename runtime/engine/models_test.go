package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/llm"
	"github.com/shipmyagent/ship/runtime/turn"
)

var fastModel = map[string]llm.Config{"fast": {Model: "fast-model"}}

// command runs a chat command as a platform would, for userID in chatID
// of the given chat type.
func (h *harness) command(chatID, chatType, userID, name, args string) string {
	h.t.Helper()
	req := dispatch.RequestContext{Channel: testChannel, ChatID: chatID, ChatKey: chatKeyOf(chatID), ChatType: chatType, UserID: userID}
	reply, ok := h.engine.Command(context.Background(), name, args, req)
	if !ok {
		h.t.Fatalf("/%s not recognised", name)
	}
	return reply
}

// modelFor returns the "model" field of the fake's last request whose
// user text is text.
func (h *harness) modelFor(text string) string {
	h.t.Helper()
	r, ok := h.lastRequest(text)
	if !ok {
		h.t.Fatalf("the model never saw %q", text)
	}
	return r.Model
}

func (h *harness) lastRequest(text string) (fakeopenai.Request, bool) {
	reqs := h.fake.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].LastUser() == text {
			return reqs[i], true
		}
	}
	return fakeopenai.Request{}, false
}

func TestModelSwitchChangesOnlyThatChat(t *testing.T) {
	h := newHarness(t, harnessOptions{models: fastModel})
	h.ask("1", "a1", "one before")
	h.ask("2", "b1", "two before")
	if a, b := h.modelFor("one before"), h.modelFor("two before"); a != "fake-model" || b != "fake-model" {
		t.Fatalf("before any switch: %s, %s; want the default fake-model", a, b)
	}

	list := h.command("1", "private", "u1", "model", "")
	for _, want := range []string{"default – openai/fake-model (default) ← this chat", "fast – openai/fast-model", "/model NAME"} {
		if !strings.Contains(list, want) {
			t.Errorf("/model lists:\n%s\nwant %q in it", list, want)
		}
	}
	if got := h.command("1", "private", "u1", "model", "fast"); !strings.Contains(got, "now uses fast (openai/fast-model)") {
		t.Fatalf("/model fast = %q", got)
	}
	h.ask("1", "a2", "one after")
	h.ask("2", "b2", "two after")
	if a, b := h.modelFor("one after"), h.modelFor("two after"); a != "fast-model" || b != "fake-model" {
		t.Fatalf("after /model fast in chat 1: chat 1 got %s (want fast-model), chat 2 got %s (want fake-model)", a, b)
	}
	if got := h.command("1", "private", "u1", "model", ""); !strings.Contains(got, "fast – openai/fast-model ← this chat") {
		t.Errorf("/model after the switch:\n%s", got)
	}
	if got := h.command("1", "private", "u1", "status", ""); !strings.Contains(got, "Model: fast (openai/fast-model)") {
		t.Errorf("/status = %q", got)
	}
	if got := h.command("1", "private", "u1", "model", "fast"); !strings.Contains(got, "already uses fast") {
		t.Errorf("switching to the same model again = %q", got)
	}
	var logged bool
	for _, e := range h.entries(chatKeyOf("1")) {
		logged = logged || e.Role == chat.RoleSystem && e.Meta["event"] == "model" && e.Meta["model"] == "fast"
	}
	if !logged {
		t.Errorf("the switch left no system entry in the chat log: %s", roles(h.entries(chatKeyOf("1"))))
	}

	// Back to the default.
	if got := h.command("1", "private", "u1", "model", "default"); !strings.Contains(got, "now uses default") {
		t.Fatalf("/model default = %q", got)
	}
	h.ask("1", "a3", "one back")
	if m := h.modelFor("one back"); m != "fake-model" {
		t.Errorf("after /model default: %s", m)
	}
}

func TestModelChoiceSurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, harnessOptions{dir: dir, models: fastModel})
	h.command("1", "private", "u1", "model", "fast")
	h.close()

	h2 := newHarness(t, harnessOptions{dir: dir, models: fastModel})
	h2.ask("1", "a1", "after restart")
	h2.ask("2", "b1", "other chat")
	if a, b := h2.modelFor("after restart"), h2.modelFor("other chat"); a != "fast-model" || b != "fake-model" {
		t.Fatalf("after a restart: chat 1 got %s (want fast-model), chat 2 %s (want fake-model)", a, b)
	}
	h2.close()

	// The model leaves ship.json: the chat is back on the default, and
	// the log says so.
	h3 := newHarness(t, harnessOptions{dir: dir, models: map[string]llm.Config{"other": {Model: "other-model"}}})
	h3.ask("1", "a2", "model gone")
	if m := h3.modelFor("model gone"); m != "fake-model" {
		t.Errorf("with its model gone from the config, chat 1 got %s; want the default", m)
	}
	if !strings.Contains(h3.logs.String(), "no longer configured") || !strings.Contains(h3.logs.String(), `"model":"fast"`) {
		t.Errorf("no log line about the vanished model:\n%s", h3.logs.String())
	}
	raw, err := os.ReadFile(filepath.Join(dir, ".ship", "models.json"))
	if err != nil || strings.Contains(string(raw), `"fast"`) {
		t.Errorf("models.json still holds the vanished choice (%v):\n%s", err, raw)
	}
}

func TestModelSwitchIsGoverned(t *testing.T) {
	pol := `{"roles": {"admin": {"members": ["telegram:boss"], "approve": true}}}`
	h := newHarness(t, harnessOptions{models: fastModel, policy: pol})

	got := h.command("-100", "supergroup", "member", "model", "fast")
	if !strings.Contains(got, "Only approvers (role admin) may switch the model in a group") {
		t.Errorf("a member switching a group's model: %q", got)
	}
	if list := h.command("-100", "supergroup", "member", "model", ""); !strings.Contains(list, "Only approvers") {
		t.Errorf("/model in a group should say who may switch:\n%s", list)
	}
	h.ask("-100", "g1", "group after refusal")
	if m := h.modelFor("group after refusal"); m != "fake-model" {
		t.Fatalf("a refused switch changed the model: %s", m)
	}
	if got := h.command("-100", "supergroup", "boss", "model", "fast"); !strings.Contains(got, "now uses fast") {
		t.Fatalf("an approver switching a group's model: %q", got)
	}
	h.ask("-100", "g2", "group after switch")
	if m := h.modelFor("group after switch"); m != "fast-model" {
		t.Errorf("after the approver's switch: %s", m)
	}

	got = h.command("1", "private", "u1", "model", "nope")
	if !strings.Contains(got, `There is no model "nope". Configured: default, fast.`) {
		t.Errorf("/model nope = %q", got)
	}
	if help := h.command("1", "private", "u1", "help", ""); !strings.Contains(help, "/model") {
		t.Errorf("/help does not mention /model:\n%s", help)
	}
}

func TestModelSwitchRules(t *testing.T) {
	for _, c := range []struct {
		rule             string
		private, group   bool
		privateRefusalIs string
	}{
		{rule: "anyone", private: true, group: true},
		{rule: "off", privateRefusalIs: "turned off"},
		{rule: "approvers", privateRefusalIs: "no role has \"approve\": true"},
	} {
		h := newHarness(t, harnessOptions{models: fastModel, modelSwitch: c.rule})
		p := h.command("1", "private", "u1", "model", "fast")
		g := h.command("-5", "group", "u1", "model", "fast")
		if strings.Contains(p, "now uses fast") != c.private || strings.Contains(g, "now uses fast") != c.group {
			t.Errorf("llm.switch %q: private %q, group %q", c.rule, p, g)
		}
		if c.privateRefusalIs != "" && !strings.Contains(p, c.privateRefusalIs) {
			t.Errorf("llm.switch %q: refusal %q should say %q", c.rule, p, c.privateRefusalIs)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestRequestCallOptionsReachTheModel(t *testing.T) {
	h := newHarness(t, harnessOptions{models: fastModel})
	h.ask("1", "a1", "plain")
	plain, _ := h.lastRequest("plain")
	if plain.Temperature == nil || *plain.Temperature != 0 || plain.TopP != nil || plain.MaxTokens != llm.DefaultMaxTokens {
		t.Errorf("without options: temperature %v, top_p %v, max tokens %d; want langchaingo's 0, none, %d",
			deref(plain.Temperature), deref(plain.TopP), plain.MaxTokens, llm.DefaultMaxTokens)
	}

	done := make(chan ingress.Outcome, 1)
	_, err := h.engine.Submit(context.Background(), ingress.Submission{Turn: turn.Turn{Model: llm.Override{Model: "fast", CallOptions: llm.CallOptions{Temperature: ptr(0.3), TopP: ptr(0.9), MaxTokens: 77}}}, Channel: testChannel, ChatKey: chatKeyOf("1"), Message: ingress.IncomingChatMessage{ChatID: "1", Text: "tuned", MessageID: "a2", UserID: "u1", ChatType: "private"}, OnDone: func(o ingress.Outcome) { done <- o }})
	if err != nil {
		t.Fatal(err)
	}
	<-done
	r, _ := h.lastRequest("tuned")
	if r.Model != "fast-model" || deref(r.Temperature) != 0.3 || deref(r.TopP) != 0.9 || r.MaxTokens != 77 {
		t.Errorf("the request got model %s, temperature %v, top_p %v, max tokens %d; want fast-model, 0.3, 0.9, 77",
			r.Model, deref(r.Temperature), deref(r.TopP), r.MaxTokens)
	}
	// The override was for that request only.
	h.ask("1", "a3", "plain again")
	if m := h.modelFor("plain again"); m != "fake-model" {
		t.Errorf("the next message got %s", m)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// A message still waiting when ship stops is run at the next start with
// the model and options its request asked for.
func TestRequestModelSurvivesResume(t *testing.T) {
	dir := t.TempDir()
	release := make(chan struct{})
	defer close(release)
	entered := make(chan struct{}, 1)
	h := newHarness(t, harnessOptions{dir: dir, journal: true, models: fastModel, handler: func(r fakeopenai.Request) fakeopenai.Response {
		if r.LastUser() == "blocker" {
			entered <- struct{}{}
			<-release
		}
		return fakeopenai.EchoChatSend(r)
	}})
	h.send("9", "z1", "blocker")
	<-entered
	_, err := h.engine.Submit(context.Background(), ingress.Submission{Turn: turn.Turn{Model: llm.Override{Model: "fast", CallOptions: llm.CallOptions{Temperature: ptr(1.25)}}}, Channel: testChannel, ChatKey: chatKeyOf("1"), Message: ingress.IncomingChatMessage{ChatID: "1", Text: "queued", MessageID: "a1", UserID: "u1", ChatType: "private"}})
	if err != nil {
		t.Fatal(err)
	}
	stop, cancel := context.WithCancel(context.Background())
	cancel() // no time to finish: the queued message stays in the journal
	_, _ = h.engine.Close(stop)
	if _, ok := h.lastRequest("queued"); ok {
		t.Fatal("the queued message ran before the stop")
	}

	h2 := newHarness(t, harnessOptions{dir: dir, journal: true, models: fastModel})
	h2.engine.Recover(context.Background())
	h2.waitIdle()
	r, ok := h2.lastRequest("queued")
	if !ok || r.Model != "fast-model" || deref(r.Temperature) != 1.25 {
		t.Fatalf("the resumed run got model %q, temperature %v; want fast-model, 1.25", r.Model, deref(r.Temperature))
	}
	if got := h2.out.texts(chatKeyOf("1")); len(got) != 1 || got[0] != "echo: queued" {
		t.Errorf("replies after resume: %q", got)
	}
}
