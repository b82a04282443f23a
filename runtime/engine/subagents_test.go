package engine_test

import (
	"context"

	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/usage"
)

// subAgentPolicy lets everyone start sub-agents and echo.
const subAgentPolicy = `{"allow": ["agent_spawn", "exec_shell(echo *)"]}`

// subAgentModel is a scripted model. A run offered chat_send (a person's
// turn) answers "spawn: ARGS" with agent_spawn(ARGS), anything else by
// chat_send "got: TEXT", and a tool result by chat_send "result: …". A
// sub-agent (no chat_send) answers "spawn: ARGS" and "run: CMD" with the
// call, and ends with the text "sub says: <last tool result or brief>".
func subAgentModel(r fakeopenai.Request) fakeopenai.Response {
	call := func(name, args string) fakeopenai.Response {
		return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: name, Arguments: args}}}
	}
	say := func(text string) fakeopenai.Response {
		b, _ := json.Marshal(map[string]string{"text": text}) // a string map always encodes
		return call("chat_send", string(b))
	}
	res, text := r.ToolResults(), r.LastUser()
	if !r.HasTool("chat_send") {
		if len(res) > 0 {
			return fakeopenai.Response{Content: "sub says: " + res[len(res)-1].Content}
		}
		if args, ok := strings.CutPrefix(text, "spawn: "); ok {
			return call(engine.SubAgentTool, args)
		}
		if cmd, ok := strings.CutPrefix(text, "run: "); ok {
			b, _ := json.Marshal(map[string]string{"command": cmd}) // a string map always encodes
			return call("exec_shell", string(b))
		}
		return fakeopenai.Response{Content: "sub says: " + text}
	}
	if len(res) > 0 {
		if lastCallName(r) == "chat_send" {
			return fakeopenai.Response{}
		}
		return say("result: " + res[len(res)-1].Content)
	}
	if args, ok := strings.CutPrefix(text, "spawn: "); ok {
		return call(engine.SubAgentTool, args)
	}
	return say("got: " + text)
}

func lastCallName(r fakeopenai.Request) string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if m := r.Messages[i]; m.Role == "assistant" && len(m.ToolCalls) > 0 {
			return m.ToolCalls[len(m.ToolCalls)-1].Name
		}
	}
	return ""
}

func spawnText(t *testing.T, args map[string]any) string {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return "spawn: " + string(b)
}

func TestSubAgentWithNarrowerToolsIsRefusedOthersAndReportsOnce(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, harnessOptions{dir: dir, handler: subAgentModel, exec: true, policy: subAgentPolicy,
		jobs: openJobs(t, dir), subAgents: &engine.SubAgentOptions{}})
	key := chatKeyOf("1")

	// The parent may run echo; the sub-agent is given only memory tools.
	if o := h.ask("1", "m1", spawnText(t, map[string]any{"brief": "run: echo secret-word", "tools": []string{"memory_*"}})); o.Err != nil {
		t.Fatal(o.Err)
	}
	h.waitText(key, "got: [sub-agent J1")
	h.waitIdle()
	got := h.out.texts(key)
	if n := countContaining(got, "[sub-agent J1"); n != 1 {
		t.Fatalf("the sub-agent's answer came back %d times, want once: %q", n, got)
	}
	if countContaining(got, "may not use exec_shell") != 1 || countContaining(got, "secret-word\\n") != 0 {
		t.Fatalf("the sub-agent's exec_shell was not refused: %q", got)
	}
	// The refusal is audited in the parent chat's log, naming the sub-agent.
	var audited bool
	for _, e := range h.entries(key) {
		if e.Role == chat.RoleTool && e.Meta["tool"] == "exec_shell" && e.Meta["subAgent"] == "J1" && e.Meta["outcome"] == "policy_rejected" {
			audited = true
		}
	}
	if !audited {
		t.Fatalf("no audited refusal naming sub-agent J1 in %+v", h.entries(key))
	}
}

func TestSubAgentWithTheCallersToolsRunsThem(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, harnessOptions{dir: dir, handler: subAgentModel, exec: true, policy: subAgentPolicy,
		jobs: openJobs(t, dir), subAgents: &engine.SubAgentOptions{}})
	key := chatKeyOf("1")
	if o := h.ask("1", "m1", spawnText(t, map[string]any{"brief": "run: echo secret-word"})); o.Err != nil {
		t.Fatal(o.Err)
	}
	h.waitText(key, "got: [sub-agent J1")
	if got := h.out.texts(key); countContaining(got, "secret-word\\n") != 1 {
		t.Fatalf("the sub-agent did not run echo with the caller's rights: %q", got)
	}
}

func TestSubAgentsNestAtMostTwoDeep(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, harnessOptions{dir: dir, handler: subAgentModel, exec: true, policy: subAgentPolicy,
		jobs: openJobs(t, dir), subAgents: &engine.SubAgentOptions{}})
	key := chatKeyOf("1")
	third := spawnText(t, map[string]any{"brief": "hello"})
	second := spawnText(t, map[string]any{"brief": third})
	if o := h.ask("1", "m1", spawnText(t, map[string]any{"brief": second})); o.Err != nil {
		t.Fatal(o.Err)
	}
	// J1 (depth 1) starts J2 (depth 2), whose own agent_spawn is refused.
	h.waitText(key, "got: [sub-agent J2")
	h.waitText(key, "got: [sub-agent J1")
	got := h.out.texts(key)
	if countContaining(got, "nested 3 deep, and at most 2 is allowed") != 1 {
		t.Fatalf("depth 3 was not refused with a clear error: %q", got)
	}
	if n := len(h.engine.Jobs(key)); n != 2 {
		t.Fatalf("%d jobs, want 2 (no third level): %+v", n, h.engine.Jobs(key))
	}
}

func TestAgentSpawnIsDeniedUnlessThePolicyAllowsIt(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, harnessOptions{dir: dir, handler: subAgentModel, exec: true, policy: `{}`,
		jobs: openJobs(t, dir), subAgents: &engine.SubAgentOptions{}})
	key := chatKeyOf("1")
	if o := h.ask("1", "m1", spawnText(t, map[string]any{"brief": "hello"})); o.Err != nil {
		t.Fatal(o.Err)
	}
	if len(h.engine.Jobs(key)) != 0 {
		t.Fatalf("a sub-agent started without the policy allowing agent_spawn: %+v", h.engine.Jobs(key))
	}
}

func TestSubAgentCannotAskForApproval(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, harnessOptions{dir: dir, handler: subAgentModel, exec: true,
		policy: `{"allow": ["agent_spawn", "exec_shell(echo *)"], "requireApproval": ["exec_shell(echo *)"]}`,
		jobs:   openJobs(t, dir), subAgents: &engine.SubAgentOptions{}})
	key := chatKeyOf("1")
	if o := h.ask("1", "m1", spawnText(t, map[string]any{"brief": "run: echo secret-word"})); o.Err != nil {
		t.Fatal(o.Err)
	}
	h.waitText(key, "got: [sub-agent J1")
	got := h.out.texts(key)
	if countContaining(got, "a sub-agent cannot ask for or grant one") != 1 || countContaining(got, "Approval needed") != 0 {
		t.Fatalf("the sub-agent's call needing approval was not refused: %q", got)
	}
	// Refused, not parked: no approval waits in the chat, and the refusal
	// with its reason is in the chat's log, naming the sub-agent.
	if pending, _ := h.engine.Pending(key); len(pending) != 0 {
		t.Fatalf("an approval was parked for the sub-agent's call: %+v", pending)
	}
	var audited bool
	for _, e := range h.entries(key) {
		if e.Role == chat.RoleTool && e.Meta["tool"] == "exec_shell" && e.Meta["subAgent"] == "J1" && e.Meta["outcome"] == "policy_rejected" &&
			strings.Contains(fmt.Sprint(e.Meta["output"]), "a sub-agent cannot ask for or grant one") {
			audited = true
		}
	}
	if !audited {
		t.Fatalf("no audited refusal with its reason naming sub-agent J1 in %+v", h.entries(key))
	}
}

// TestSubAgentSpendsItsStartersBudget: every model call, the sub-agent's
// too, is counted for the person who started it.
func TestSubAgentSpendsItsStartersBudget(t *testing.T) {
	dir := t.TempDir()
	tally, err := usage.Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	counted := func(r fakeopenai.Request) fakeopenai.Response {
		res := subAgentModel(r)
		res.PromptTokens, res.CompletionTokens = 100, 10
		return res
	}
	h := newHarness(t, harnessOptions{dir: dir, handler: counted, exec: true, policy: subAgentPolicy,
		jobs: openJobs(t, dir), subAgents: &engine.SubAgentOptions{}, usage: tally})
	key := chatKeyOf("1")
	if o := h.ask("1", "m1", spawnText(t, map[string]any{"brief": "hello"})); o.Err != nil {
		t.Fatal(o.Err)
	}
	h.waitText(key, "got: [sub-agent J1")
	h.waitIdle()
	// Every call counts: the person's turn, the sub-agent's, the result's.
	calls := int64(len(h.fake.Requests()))
	if _, who := tally.Today(context.Background(), key, "telegram:u1"); who.Output != 10*calls {
		t.Fatalf("the person was counted %d output tokens over %d model calls, want 10 a call", who.Output, calls)
	}
}

// TestSubAgentCannotWidenItsStartersRights: the starter may run echo only;
// a sub-agent asked for every tool ("*", exec_shell by name) and told to
// read a file still has the starter's rights, not more. The file's text
// never comes back and the refusal is audited under the sub-agent.
func TestSubAgentCannotWidenItsStartersRights(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("launch-codes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOptions{dir: dir, handler: subAgentModel, exec: true, policy: subAgentPolicy,
		jobs: openJobs(t, dir), subAgents: &engine.SubAgentOptions{}})
	key := chatKeyOf("1")
	if o := h.ask("1", "m1", spawnText(t, map[string]any{"brief": "run: cat secret.txt", "tools": []string{"*", "exec_shell"}})); o.Err != nil {
		t.Fatal(o.Err)
	}
	h.waitText(key, "got: [sub-agent J1")
	h.waitIdle()
	got := h.out.texts(key)
	if countContaining(got, "launch-codes") != 0 {
		t.Fatalf("the sub-agent read what its starter may not: %q", got)
	}
	var audited bool
	for _, e := range h.entries(key) {
		if e.Role == chat.RoleTool && e.Meta["tool"] == "exec_shell" && e.Meta["subAgent"] == "J1" && e.Meta["outcome"] == "policy_rejected" {
			audited = true
		}
		if strings.Contains(e.Text, "launch-codes") || strings.Contains(fmt.Sprint(e.Meta["output"]), "launch-codes") {
			t.Errorf("the file's text is in the chat's log: %+v", e)
		}
	}
	if !audited {
		t.Fatalf("no audited refusal naming sub-agent J1 in %+v", h.entries(key))
	}
}
