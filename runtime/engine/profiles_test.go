package engine_test

import (
	"strings"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/events"
	"github.com/shipmyagent/ship/runtime/policy"
	"github.com/shipmyagent/ship/runtime/profiles"
)

// profileHarness has exec_shell allowed by the tool policy, Agent.md for
// the default agent, and a "coder" profile bound to the groups
// telegram:chat:-100* with its own prompt and model and exec_shell denied.
func profileHarness(t *testing.T) *harness {
	t.Helper()
	set, err := profiles.New([]profiles.Profile{{
		Name: "coder", Prompt: "You are the coder profile.", Model: "fast",
		Tools: policy.Narrowing{Deny: []string{"exec_shell"}}, Chats: []string{"telegram:chat:-100*"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return newHarness(t, harnessOptions{models: fastModel, exec: true, policy: `{"allow": ["exec_shell"]}`,
		agentMD: "You are the default agent.", profiles: set})
}

// systemOf is the system prompt of the fake's last request whose user text
// is text.
func (h *harness) systemOf(text string) (fakeopenai.Request, string) {
	h.t.Helper()
	r, ok := h.lastRequest(text)
	if !ok {
		h.t.Fatalf("the model never saw %q", text)
	}
	for _, m := range r.Messages {
		if m.Role == "system" {
			return r, m.Content
		}
	}
	return r, ""
}

// routeOf is the route_decided event among evs.
func routeOf(t *testing.T, evs []events.Event) events.Event {
	t.Helper()
	for _, e := range evs {
		if e.Type == events.TypeRouteDecided {
			return e
		}
	}
	t.Fatalf("no route_decided event among %d events", len(evs))
	return events.Event{}
}

func TestABoundGroupIsAnsweredByItsProfile(t *testing.T) {
	h := profileHarness(t)

	_, evs := h.askWatched("-1001", "g1", "build the project")
	if e := routeOf(t, evs); e.Agent != "coder" || e.Reason != "bound:telegram:chat:-100*" {
		t.Errorf("route_decided = %s/%s, want coder/bound:telegram:chat:-100*", e.Agent, e.Reason)
	}
	r, system := h.systemOf("build the project")
	if r.Model != "fast-model" {
		t.Errorf("the bound group's run used model %q, want the profile's fast-model", r.Model)
	}
	if r.HasTool("exec_shell") {
		t.Error("the profile denies exec_shell, yet the model was offered it")
	}
	if !r.HasTool("chat_send") {
		t.Error("the profile only denies exec_shell, yet chat_send was not offered")
	}
	if !strings.Contains(system, "You are the coder profile.") || strings.Contains(system, "You are the default agent.") {
		t.Errorf("system prompt of the bound group:\n%s\nwant the profile's prompt instead of Agent.md", system)
	}

	// Another chat is answered as before.
	_, evs = h.askWatched("5", "p1", "hello there")
	if e := routeOf(t, evs); e.Agent != "default" || e.Reason != "default" {
		t.Errorf("route_decided = %s/%s, want default/default", e.Agent, e.Reason)
	}
	r, system = h.systemOf("hello there")
	if r.Model != "fake-model" || !r.HasTool("exec_shell") || !strings.Contains(system, "You are the default agent.") {
		t.Errorf("an unbound chat: model %q, exec_shell offered %v, system:\n%s", r.Model, r.HasTool("exec_shell"), system)
	}
}

func TestAgentCommandPicksAProfileForOneMessage(t *testing.T) {
	h := profileHarness(t)

	// In the coder's group, the default agent for one message.
	_, evs := h.askWatched("-1001", "g1", "/agent default what time is it")
	if e := routeOf(t, evs); e.Agent != "default" || e.Reason != "explicit" {
		t.Errorf("route_decided = %s/%s, want default/explicit", e.Agent, e.Reason)
	}
	r, _ := h.systemOf("what time is it")
	if r.Model != "fake-model" || !r.HasTool("exec_shell") {
		t.Errorf("/agent default: model %q, exec_shell offered %v; want the default's", r.Model, r.HasTool("exec_shell"))
	}
	// The next message is the group's profile's again.
	h.ask("-1001", "g2", "and now")
	if r, _ := h.systemOf("and now"); r.Model != "fast-model" {
		t.Errorf("the message after /agent used %q, want the bound profile's fast-model", r.Model)
	}

	// In a private chat, @coder picks the coder.
	_, evs = h.askWatched("5", "p1", "@coder fix the test")
	if e := routeOf(t, evs); e.Agent != "coder" || e.Reason != "explicit" {
		t.Errorf("route_decided = %s/%s, want coder/explicit", e.Agent, e.Reason)
	}
	if r, _ := h.systemOf("fix the test"); r.Model != "fast-model" || r.HasTool("exec_shell") {
		t.Errorf("@coder: model %q, exec_shell offered %v", r.Model, r.HasTool("exec_shell"))
	}
	// A mention of someone who is no profile is just text.
	h.ask("5", "p2", "@alice says hi")
	if r, _ := h.systemOf("@alice says hi"); r.Model != "fake-model" {
		t.Errorf("@alice: model %q, want the default's", r.Model)
	}
}

func TestAgentCommandListsTheProfiles(t *testing.T) {
	h := profileHarness(t)
	for _, args := range []string{"", "nobody here", "coder"} {
		got := h.command("5", "private", "u1", "agent", args)
		if !strings.Contains(got, "• coder – model fast – answers in telegram:chat:-100*") {
			t.Errorf("/agent %s =\n%s", args, got)
		}
	}
	if got := h.command("5", "private", "u1", "agent", "nobody here"); !strings.Contains(got, `There is no agent "nobody"`) {
		t.Errorf("/agent nobody = %q", got)
	}
	if help := h.command("5", "private", "u1", "help", ""); !strings.Contains(help, "/agent NAME <text>") {
		t.Errorf("/help does not mention /agent:\n%s", help)
	}
	plain := newHarness(t, harnessOptions{})
	if help := plain.command("5", "private", "u1", "help", ""); strings.Contains(help, "/agent") {
		t.Errorf("/help without profiles mentions /agent:\n%s", help)
	}
	if got := plain.command("5", "private", "u1", "agent", "coder hi"); !strings.Contains(got, "No agent profiles are configured") {
		t.Errorf("/agent without profiles = %q", got)
	}
}
