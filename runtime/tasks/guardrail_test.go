package tasks_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/events"
	"github.com/shipmyagent/ship/runtime/tasks"
)

// reportTask is a task whose output must be a report object.
const reportTask = `---
cron: "0 9 * * *"
timezone: UTC
chatKey: "telegram:chat:77"
outputSchema: {"type": "object", "required": ["date", "items"], "additionalProperties": false,
  "properties": {"date": {"type": "string"}, "items": {"type": "array", "items": {"type": "string"}}}}
---
Post the daily report as JSON.
`

// scriptedOutputs has the fake model answer the task, and each request to
// repair it, with the next of outputs through chat_send; it records the
// repair notes the model was given.
type scriptedOutputs struct {
	mu      sync.Mutex
	outputs []string
	notes   []string
}

func (s *scriptedOutputs) handle(r fakeopenai.Request) fakeopenai.Response {
	last := r.LastUser()
	if !strings.Contains(last, "[scheduled task report") && !strings.Contains(last, "[output check of task report") {
		return fakeopenai.EchoChatSend(r)
	}
	if len(r.ToolResults()) > 0 {
		return fakeopenai.Response{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if strings.Contains(last, "[output check of task report") {
		s.notes = append(s.notes, last)
	}
	out := s.outputs[0]
	if len(s.outputs) > 1 {
		s.outputs = s.outputs[1:]
	}
	args, _ := json.Marshal(map[string]string{"text": out})
	return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: "chat_send", Arguments: string(args)}}}
}

func (s *scriptedOutputs) repairNotes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.notes...)
}

// runReport runs the report task by hand with the model answering outputs
// in turn, and returns the task's status once the run ended.
func runReport(t *testing.T, e *env, script *scriptedOutputs) tasks.Status {
	t.Helper()
	e.model.SetHandler(script.handle)
	e.say(e.tg.PrivateText(77, "ann", "hi"))
	e.writeTask("report", reportTask, e.clock.Now())
	id, err := e.sched.RunNow(context.Background(), "report")
	if err != nil {
		t.Fatal(err)
	}
	e.idle()
	st := e.status("report")
	if st.LastRunID != id {
		t.Fatalf("status %+v, want run %s", st, id)
	}
	return st
}

const validReport = `{"date":"2026-03-04","items":["backup ok"]}`

func TestValidTaskOutputPassesUnchanged(t *testing.T) {
	e := newEnv(t, setup{})
	script := &scriptedOutputs{outputs: []string{validReport}}
	st := runReport(t, e, script)
	if got := e.sentWith(`"date"`); len(got) != 1 || got[0].Text != validReport {
		t.Errorf("sent %+v; want the report once, as written", got)
	}
	if notes := script.repairNotes(); len(notes) != 0 {
		t.Errorf("a valid output was sent back for repair: %q", notes)
	}
	if st.LastStatus != tasks.StatusOK {
		t.Errorf("status %+v, want ok", st)
	}
}

func TestInvalidTaskOutputIsRepairedBeforeItIsSent(t *testing.T) {
	e := newEnv(t, setup{})
	sub, _ := e.eng.Subscribe(func(ev events.Event) bool { return ev.Type == events.TypeContent }, 0, 256)
	defer sub.Close()
	invalid := `{"date":"2026-03-04","items":"backup ok"}`
	script := &scriptedOutputs{outputs: []string{invalid, validReport}}
	st := runReport(t, e, script)
	// The event stream shows the output as the chat got it, not before.
	var shown []string
	for len(sub.C) > 0 {
		if ev := <-sub.C; ev.Content != "" && strings.HasPrefix(ev.TaskID, "task-report") {
			shown = append(shown, ev.Content)
		}
	}
	if len(shown) != 1 || shown[0] != validReport {
		t.Errorf("content events %q; want the repaired report only", shown)
	}
	notes := script.repairNotes()
	if len(notes) != 1 || !strings.Contains(notes[0], "items") || !strings.Contains(notes[0], invalid) {
		t.Fatalf("repair notes %q; want one naming the failing field and quoting the output", notes)
	}
	if got := e.sentWith(`"date"`); len(got) != 1 || got[0].Text != validReport {
		t.Errorf("sent %+v; want only the repaired report", got)
	}
	if st.LastStatus != tasks.StatusOK {
		t.Errorf("status %+v, want ok", st)
	}
}

func TestHopelessTaskOutputIsRejected(t *testing.T) {
	e := newEnv(t, setup{})
	sub, _ := e.eng.Subscribe(func(ev events.Event) bool { return ev.Type == events.TypeGuardrailFailed }, 0, 4)
	defer sub.Close()
	invalid := `{"date": 20260304}`
	script := &scriptedOutputs{outputs: []string{invalid}}
	st := runReport(t, e, script)
	if notes := script.repairNotes(); len(notes) != 2 {
		t.Errorf("%d repairs asked, want 2", len(notes))
	}
	for _, s := range e.tg.Sent() {
		if strings.Contains(s.Text, "20260304") {
			t.Errorf("the rejected output reached the chat: %+v", s)
		}
	}
	got := e.sentWith("did not match its schema after 2 repairs")
	if len(got) != 1 || got[0].ChatID != 77 {
		t.Errorf("sent %+v; want one note in chat 77", e.tg.Sent())
	}
	ev := await(t, sub.C, "guardrail_failed")
	if ev.ChatKey != "telegram:chat:77" || ev.TaskName != "report" || ev.ErrorMessage == "" || !strings.HasPrefix(ev.TaskID, "task-report-run-") {
		t.Errorf("event %+v", ev)
	}
	if b, err := json.Marshal(ev); err != nil || !strings.Contains(string(b), `"type":"guardrail_failed"`) ||
		!strings.Contains(string(b), `"taskName":"report"`) || !strings.Contains(string(b), `"errors":"`) {
		t.Errorf("on the wire: %s, %v", b, err)
	}
	if st.LastStatus != tasks.StatusFailed || !strings.Contains(st.LastResult, "schema") {
		t.Errorf("status %+v, want failed by its schema", st)
	}
}

// A checked run the model cannot answer ends as any failed run does: its
// error line reaches the chat (it is ship's, not the output).
func TestACheckedRunThatFailsSaysSo(t *testing.T) {
	e := newEnv(t, setup{})
	e.model.SetHandler(func(r fakeopenai.Request) fakeopenai.Response {
		if strings.Contains(r.LastUser(), "[scheduled task report") {
			return fakeopenai.Response{Status: 400, ErrorMessage: "bad request"}
		}
		return fakeopenai.EchoChatSend(r)
	})
	e.say(e.tg.PrivateText(77, "ann", "hi"))
	e.writeTask("report", reportTask, e.clock.Now())
	if _, err := e.sched.RunNow(context.Background(), "report"); err != nil {
		t.Fatal(err)
	}
	e.idle()
	if got := e.sentWith("could not get an answer"); len(got) != 1 {
		t.Errorf("sent %+v; want the run's error line once", e.tg.Sent())
	}
	if st := e.status("report"); st.LastStatus != tasks.StatusFailed {
		t.Errorf("status %+v, want failed", st)
	}
}
