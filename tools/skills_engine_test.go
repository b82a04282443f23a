package tools_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/policy"
	"github.com/shipmyagent/ship/runtime/skills"
	"github.com/shipmyagent/ship/tools"
)

// skillThenRun is a scripted model: for "skill ID run: CMD" it loads the
// skill, then calls exec_shell with CMD; for "run: CMD" it only runs it.
// It reports the last tool result through chat_send and then ends.
func skillThenRun(r fakeopenai.Request) fakeopenai.Response {
	call := func(name string, args map[string]string) fakeopenai.Response {
		b, _ := json.Marshal(args) // a string map always encodes
		return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: name, Arguments: string(b)}}}
	}
	var plan []fakeopenai.Response
	text := r.LastUser()
	if rest, ok := strings.CutPrefix(text, "skill "); ok {
		id, cmd, _ := strings.Cut(rest, " run: ")
		plan = append(plan, call(tools.SkillsLoadName, map[string]string{"id": id}))
		text = "run: " + cmd
	}
	plan = append(plan, call(tools.ExecShellName, map[string]string{"command": strings.TrimPrefix(text, "run: ")}))
	res := r.ToolResults()
	switch {
	case len(res) < len(plan):
		return plan[len(res)]
	case len(res) == len(plan):
		return call("chat_send", map[string]string{"text": "result: " + res[len(res)-1].Content})
	}
	return fakeopenai.Response{}
}

// skillEngine is an engine as ship start wires it, with the skills of dir
// and exec_shell, which the policy allows everyone.
type skillEngine struct {
	eng  *engine.Engine
	fake *fakeopenai.Server
	mu   sync.Mutex
	sent map[string][]string // chatKey → texts
}

func newSkillEngine(t *testing.T, dir string) *skillEngine {
	t.Helper()
	fake, err := fakeopenai.Start(skillThenRun)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	model, err := openai.New(openai.WithBaseURL(fake.BaseURL()), openai.WithToken("test-key"), openai.WithModel("fake-model"))
	if err != nil {
		t.Fatal(err)
	}
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	cat, err := skills.New(skills.Options{ProjectDir: dir, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse(json.RawMessage(`{"allow": ["exec_shell"]}`))
	if err != nil {
		t.Fatal(err)
	}
	shell := tools.NewExecShell(tools.ExecShellOptions{Dir: dir, Logger: log})
	eng, err := engine.New(engine.Options{
		Tools: func(s chat.Log, d *dispatch.Deliverer) []agent.Tool {
			return append(append(tools.Default(s, d), shell), tools.Skills(cat)...)
		},
		PromptSections: []func() string{cat.PromptSection},
		Policy:         func() *policy.Policy { return pol },
		ChatsDir:       filepath.Join(dir, ".ship", "chats"),
		Durability:     chat.DurabilityNone,
		Model:          model,
		AgentMDPath:    filepath.Join(dir, "Agent.md"),
		RetryBackoff:   time.Millisecond,
		Logger:         log,
	})
	if err != nil {
		t.Fatal(err)
	}
	se := &skillEngine{eng: eng, fake: fake, sent: map[string][]string{}}
	eng.Register("telegram", dispatch.DispatcherFunc(func(_ context.Context, req dispatch.RequestContext, text string) error {
		se.mu.Lock()
		defer se.mu.Unlock()
		se.sent[req.ChatKey] = append(se.sent[req.ChatKey], text)
		return nil
	}))
	t.Cleanup(func() { _, _ = eng.Close(context.Background()) })
	return se
}

// ask runs one message in its own chat and returns what the chat got and
// the outcome the audit recorded for exec_shell.
func (se *skillEngine) ask(t *testing.T, chatID, text string) (reply, execOutcome string) {
	t.Helper()
	chatKey := "telegram:chat:" + chatID
	done := make(chan ingress.Outcome, 1)
	if _, err := se.eng.Submit(context.Background(), ingress.Submission{
		Channel: "telegram", ChatKey: chatKey,
		Message: ingress.IncomingChatMessage{ChatID: chatID, Text: text, MessageID: "m1", UserID: "u1", ChatType: "private"},
		OnDone:  func(o ingress.Outcome) { done <- o },
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case o := <-done:
		if o.Err != nil {
			t.Fatalf("%q: %v", text, o.Err)
		}
	case <-time.After(30 * time.Second): // a hang guard, not a timing assertion
		t.Fatalf("no outcome for %q", text)
	}
	err := se.eng.Scan(context.Background(), chatKey, func(e chat.ChatLogEntryV1) bool {
		if e.Role == chat.RoleTool && e.Meta["tool"] == tools.ExecShellName {
			execOutcome, _ = e.Meta["outcome"].(string)
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	se.mu.Lock()
	defer se.mu.Unlock()
	return strings.Join(se.sent[chatKey], "\n"), execOutcome
}

func TestASkillsAllowedToolsLimitTheRestOfTheRun(t *testing.T) {
	dir := skillProject(t, map[string]string{
		"git-helper/SKILL.md": "---\ndescription: Answer questions about the repository's history.\nallowed-tools: Bash(git:*)\n---\nUse git log.\n",
	})
	se := newSkillEngine(t, dir)

	// Without the skill the policy lets echo run: a refusal below is the
	// skill's doing.
	reply, outcome := se.ask(t, "1", "run: echo hi")
	if outcome != "ok" || !strings.Contains(reply, `hi\n`) {
		t.Fatalf("without the skill: outcome %q, reply %q; want echo to run", outcome, reply)
	}
	first := se.fake.Requests()[0]
	if !strings.Contains(first.Messages[0].Content, "- git-helper: Answer questions about the repository's history.") ||
		!first.HasTool(tools.SkillsLoadName) || !first.HasTool(tools.SkillsListName) {
		t.Errorf("the model was not shown the skill: system prompt %q", first.Messages[0].Content)
	}

	reply, outcome = se.ask(t, "2", "skill git-helper run: echo hi")
	if outcome != agent.RefusedByPolicy || !strings.Contains(reply, "skill git-helper limits this run to exec_shell(git *)") {
		t.Errorf("after loading the skill: outcome %q, reply %q; want echo refused by the skill's limit", outcome, reply)
	}

	reply, outcome = se.ask(t, "3", "skill git-helper run: git --version")
	if outcome != "ok" {
		t.Errorf("git after loading the skill: outcome %q, reply %q; want it to run", outcome, reply)
	}

	// The limit was the run's: the next run of the same chat is free again.
	reply, outcome = se.ask(t, "2", "run: echo again")
	if outcome != "ok" || !strings.Contains(reply, "again") {
		t.Errorf("the next run: outcome %q, reply %q; want echo to run", outcome, reply)
	}
}
