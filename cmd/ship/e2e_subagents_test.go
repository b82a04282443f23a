package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
)

// subAgentTools lets everyone start sub-agents and run echo; the sandbox
// is off so the test needs no bubblewrap.
const subAgentTools = `{
  "exec": {"enabled": true, "sandbox": "off"},
  "allow": ["agent_spawn", "exec_shell(echo *)"]
}`

// subAgentScript is the fake model of the sub-agent test, scripted by
// what each request shows. A person's turn (chat_send offered): "delegate"
// starts a sub-agent given only chat_load_history, "nest" one that nests;
// after agent_spawn it says "on it"; a sub-agent's answer coming back
// ("[sub-agent …") is passed on as "answer: …". A sub-agent (no
// chat_send): "check the build log" tries exec_shell, "nest level N"
// starts "nest level N+1"; with a tool's result it reports it.
func subAgentScript(r fakeopenai.Request) fakeopenai.Response {
	call := func(name string, args any) fakeopenai.Response {
		b, _ := json.Marshal(args) // plain maps always encode
		return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: name, Arguments: string(b)}}}
	}
	say := func(text string) fakeopenai.Response { return call("chat_send", map[string]string{"text": text}) }
	text, res, last := r.LastUser(), r.ToolResults(), lastToolCalled(r)
	if !r.HasTool("chat_send") {
		if len(res) > 0 {
			return fakeopenai.Response{Content: "sub-agent report: " + res[len(res)-1].Content}
		}
		if n, ok := strings.CutPrefix(text, "nest level "); ok {
			return call("agent_spawn", map[string]string{"brief": "nest level " + n + "+1"})
		}
		return call("exec_shell", map[string]string{"command": "echo hi"})
	}
	switch {
	case last == "chat_send":
		return fakeopenai.Response{}
	case last == "agent_spawn" && len(res) > 0:
		return say("on it: " + res[len(res)-1].Content)
	case strings.HasPrefix(text, "[sub-agent "):
		first, _, _ := strings.Cut(text, "\n")
		return say("answer: " + first)
	case strings.Contains(text, "delegate"):
		return call("agent_spawn", map[string]any{"brief": "check the build log", "tools": []string{"chat_load_history"}})
	case strings.Contains(text, "nest"):
		return call("agent_spawn", map[string]string{"brief": "nest level 1"})
	}
	return say("echo: " + text)
}

// lastToolCalled is the tool called last after the request's last user
// message ("" when none was).
func lastToolCalled(r fakeopenai.Request) string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := r.Messages[i]
		if m.Role == "user" {
			return ""
		}
		if m.Role == "assistant" && len(m.ToolCalls) > 0 {
			return m.ToolCalls[len(m.ToolCalls)-1].Name
		}
	}
	return ""
}

// TestE2ESubAgentInATelegramTopic runs sub-agents through the real binary,
// the Telegram fake and the OpenAI fake: a sub-agent given only
// chat_load_history tries exec_shell and is denied (audited in the chat
// log, naming it), its answer comes back to the topic exactly once; a
// chain of sub-agents is refused at depth 3 with a clear error; /api/sse
// carries the session-plane events of the runs, and a restart resumes
// the topic's session from its log.
func TestE2ESubAgentInATelegramTopic(t *testing.T) {
	const token = "4242:e2e-subagents-token"
	const group, topic = int64(-100778), int64(5)
	const key = "telegram:chat:-100778:topic:5"
	tg := startTelegram(t, token)
	fake := startFake(t, subAgentScript)
	dir := initProject(t)
	setTools(t, dir, subAgentTools)
	env := modelEnv(fake, telegramEnv(tg, token)...)
	p := startShip(t, dir, env)
	sse := sseLines(t, p)

	ctx, cancel := context.WithTimeout(context.Background(), 4*hangGuard)
	defer cancel()
	count := func(want string) int {
		n := 0
		for _, s := range tg.Shown() {
			if s.ChatID == group && s.ThreadID == topic && strings.Contains(s.Text, want) {
				n++
			}
		}
		return n
	}
	waitFor := func(what, want string) {
		t.Helper()
		if err := tg.Wait(ctx, func() bool { return count(want) > 0 }); err != nil {
			t.Fatalf("waiting for %s: %v; sent: %+v", what, err, tg.Shown())
		}
	}
	say := func(text string) { tg.Push(tg.TopicText(group, topic, 1001, "alice", tg.Mention()+" "+text)) }

	// A sub-agent with only chat_load_history: exec_shell is denied.
	say("delegate the log check")
	waitFor("the spawn", `on it: {"job":"J1"`)
	waitFor("the sub-agent's answer", "answer: [sub-agent J1")
	const denied = "may not use exec_shell"
	if count("answer: [sub-agent J1") != 1 || count(denied) != 1 {
		t.Fatalf("the sub-agent's answer (with its denial) did not come back once: %+v", shownIn(tg, group, topic))
	}
	var audited bool
	for _, e := range chatLogOf(t, dir, key) {
		meta, _ := e["meta"].(map[string]any)
		if e["role"] == "tool" && meta["tool"] == "exec_shell" && meta["subAgent"] == "J1" && meta["outcome"] == "policy_rejected" &&
			strings.Contains(fmt.Sprint(meta["output"]), denied) {
			audited = true
		}
	}
	if !audited {
		t.Fatalf("the sub-agent's denied exec_shell is not in the chat log naming J1: %+v", chatLogOf(t, dir, key))
	}

	// A chain: J2 (depth 1) starts J3 (depth 2), whose spawn is refused.
	say("nest please")
	waitFor("the depth-3 refusal", "answer: [sub-agent J3")
	const refusal = "refused: a sub-agent here would be nested 3 deep, and at most 2 is allowed (tools.agents.maxDepth)"
	waitFor("J2's answer", "answer: [sub-agent J2")
	if count(refusal) != 1 || count("answer: [sub-agent J4") != 0 {
		t.Fatalf("depth 3 was not refused once with a clear error: %+v", shownIn(tg, group, topic))
	}

	// /api/sse: the person's turn and the sub-agent's run, each inside
	// dispatch_started / dispatch_completed, each session created once.
	for _, want := range [][]string{
		{`"type":"dispatch_started"`, `"chatKey":"` + key + `"`, `"agent":"default"`, `"requestId":"`, `"queueWaitMs":`},
		{`"type":"session_created"`, `"chatKey":"` + key + `"`, `"agent":"default"`, `"requestId":"`},
		{`"type":"dispatch_completed"`, `"chatKey":"` + key + `"`, `"agent":"default"`, `"outcome":"ok"`, `"toolCalls":`},
		{`"type":"dispatch_started"`, `"agent":"sub-agent"`, `"jobId":"J1"`, `"depth":1`, `"leaseId":"L`, `"parentRequestId":"`},
		{`"type":"session_created"`, `"agent":"sub-agent"`, `"jobId":"J1"`},
		{`"type":"dispatch_completed"`, `"agent":"sub-agent"`, `"jobId":"J1"`, `"outcome":"ok"`},
		{`"type":"dispatch_started"`, `"jobId":"J3"`, `"depth":2`, `"parentJobId":"J2"`},
		{`"type":"job_started"`, `"jobId":"J1"`, `"leaseId":"L`},
	} {
		eventually(t, "the event "+strings.Join(want, " ")+" on /api/sse", func() bool {
			for _, line := range sse() {
				if containsAll(line, want) {
					return true
				}
			}
			return false
		})
	}

	// Still once each, now that every run of the test has ended.
	for want, n := range map[string]int{"answer: [sub-agent J1": 1, "answer: [sub-agent J2": 1, "answer: [sub-agent J3": 1, denied: 1, refusal: 1} {
		if got := count(want); got != n {
			t.Errorf("%q shown %d times in the topic, want %d", want, got, n)
		}
	}

	// After a restart the topic's session is resumed from its log.
	p.stop(t, syscall.SIGTERM)
	p = startShip(t, dir, env)
	sse = sseLines(t, p)
	say("hello again")
	waitFor("the answer after the restart", "echo: hello again")
	eventually(t, "session_resumed on /api/sse", func() bool {
		for _, line := range sse() {
			if containsAll(line, []string{`"type":"session_resumed"`, `"chatKey":"` + key + `"`, `"restoredMessages":`}) &&
				!strings.Contains(line, `"restoredMessages":0`) {
				return true
			}
		}
		return false
	})
	p.stop(t, syscall.SIGTERM)
}

// chatLogOf reads the entries of chatKey from the project's chat logs.
func chatLogOf(t *testing.T, dir, chatKey string) []map[string]any {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, ".ship", "chats", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			continue
		}
		for _, e := range readChatLog(t, f) {
			if e["chatKey"] == chatKey {
				out = append(out, e)
			}
		}
	}
	return out
}
