package tasks_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/tasks"
)

// toolCaller is a scripted model: a user message "call <tool> <json args>"
// makes it call that tool, then chat_send the tool's result; anything else
// is echoed.
func toolCaller(r fakeopenai.Request) fakeopenai.Response {
	name, args, ok := strings.Cut(strings.TrimPrefix(r.LastUser(), "call "), " ")
	if !strings.HasPrefix(r.LastUser(), "call ") || !ok {
		return fakeopenai.EchoChatSend(r)
	}
	if res := r.ToolResults(); len(res) > 0 {
		text, _ := json.Marshal(map[string]string{"text": res[len(res)-1].Content})
		return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: "chat_send", Arguments: string(text)}}}
	}
	return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: name, Arguments: args}}}
}

// ask has the user of private chat 77 write text and returns the bot's
// answer.
func (e *env) ask(text string) string {
	e.t.Helper()
	before := len(e.tg.Sent())
	e.tg.Push(e.tg.PrivateText(77, "ann", text))
	sent := e.waitSent(before + 1)
	e.idle()
	return sent[before].Text
}

func TestTaskToolsAreDeniedUntilAllowed(t *testing.T) {
	e := newEnv(t, setup{})
	e.model.SetHandler(toolCaller)
	got := e.ask("call task_create {}")
	if !strings.Contains(got, `unknown tool \"task_create\"`) && !strings.Contains(got, "refused") {
		t.Errorf("task_create without a rule answered %q", got)
	}
	for _, r := range e.model.Requests() {
		for _, name := range []string{"task_create", "task_list", "task_delete"} {
			if r.HasTool(name) {
				t.Errorf("%s offered without a rule allowing it", name)
			}
		}
	}
	if _, err := os.Stat(e.taskDir()); err == nil {
		t.Error("the task folder was written to")
	}
}

func TestTaskToolsCreateListDelete(t *testing.T) {
	// Everyone may manage tasks; a task's own runs may not create tasks
	// (the policy sees them as scheduler:<name>).
	e := newEnv(t, setup{policy: `{"allow": ["task_*"], "roles": {"tasks": {"members": ["scheduler:*"], "deny": ["task_create"]}}}`})
	e.model.SetHandler(toolCaller)

	got := e.ask(`call task_create {"name":"standup","cron":"0 9 * * 1-5","timezone":"UTC","instruction":"Ask everyone for their update."}`)
	if !strings.Contains(got, `"success":true`) || !strings.Contains(got, `"nextRun":"2026-03-04T09:00:00Z"`) {
		t.Fatalf("task_create answered %q", got)
	}
	data, err := os.ReadFile(filepath.Join(e.taskDir(), "standup.md"))
	if err != nil {
		t.Fatal(err)
	}
	task, err := tasks.Parse("standup", data)
	if err != nil || task.ChatKey != "telegram:chat:77" || task.Instruction != "Ask everyone for their update." {
		t.Errorf("file = %q (%v); want the current chat as its chatKey", data, err)
	}
	if got := e.ask(`call task_create {"name":"standup","cron":"0 9 * * *","instruction":"again"}`); !strings.Contains(got, "delete it first") {
		t.Errorf("creating it twice answered %q", got)
	}
	if got := e.ask(`call task_create {"name":"Bad Name","cron":"0 9 * * *","instruction":"x"}`); !strings.Contains(got, "a-z 0-9 _ -") {
		t.Errorf("a bad name answered %q", got)
	}
	if got := e.ask(`call task_create {"name":"x","cron":"0 9 * * *","instruction":"x","when":"now"}`); !strings.Contains(got, `unknown field \"when\"`) &&
		!strings.Contains(got, `unknown field "when"`) { // Telegram shows Markdown: \" reads as "
		t.Errorf("an unknown argument answered %q", got)
	}

	// The task runs at its slot in this chat, as scheduler:standup. (The
	// file's time is the disk's; the test's clock says it is 08:00.)
	path := filepath.Join(e.taskDir(), "standup.md")
	if err := os.Chtimes(path, e.clock.Now(), e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	e.model.SetHandler(fakeopenai.EchoChatSend)
	e.clock.Set(time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC))
	e.sched.Tick(context.Background())
	e.waitStatus("standup", tasks.StatusOK)
	reqs := e.model.Requests()
	last := reqs[len(reqs)-1]
	if !strings.Contains(last.LastUser(), "[scheduled task standup]") || last.HasTool("task_create") || !last.HasTool("task_list") {
		t.Errorf("the scheduled run saw task_create=%v task_list=%v (want false, true)", last.HasTool("task_create"), last.HasTool("task_list"))
	}

	e.model.SetHandler(toolCaller)
	got = e.ask("call task_list {}")
	if !strings.Contains(got, `"name":"standup"`) || !strings.Contains(got, `"lastStatus":"ok"`) || !strings.Contains(got, `"nextRun":"2026-03-05T09:00:00Z"`) {
		t.Errorf("task_list answered %q", got)
	}
	if got := e.ask(`call task_delete {"name":"standup"}`); !strings.Contains(got, `"deleted":"standup"`) {
		t.Errorf("task_delete answered %q", got)
	}
	if got := e.ask(`call task_delete {"name":"standup"}`); !strings.Contains(got, "no such task") {
		t.Errorf("deleting it twice answered %q", got)
	}
	if _, err := os.Stat(filepath.Join(e.taskDir(), "standup.md")); !os.IsNotExist(err) {
		t.Errorf("the file is still there: %v", err)
	}
}
