package tools_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/tools"
)

// TestASkillsOutputSchemaChecksTheRestOfTheRun: once a run loads a skill
// with an output schema, its output is held, checked, and repaired by the
// model before it reaches the chat.
func TestASkillsOutputSchemaChecksTheRestOfTheRun(t *testing.T) {
	dir := skillProject(t, map[string]string{
		"report/SKILL.md":    "---\ndescription: Write the status report.\noutputSchemaFile: schema.json\n---\nAnswer with the report as JSON.\n",
		"report/schema.json": `{"type":"object","required":["status"],"properties":{"status":{"enum":["green","red"]}}}`,
	})
	se := newSkillEngine(t, dir)
	const invalid, valid = `{"status":"blue"}`, `{"status":"green"}`
	var repairNote string
	se.fake.SetHandler(func(r fakeopenai.Request) fakeopenai.Response {
		send := func(text string) fakeopenai.Response {
			b, _ := json.Marshal(map[string]string{"text": text}) // a string map always encodes
			return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: "chat_send", Arguments: string(b)}}}
		}
		res := r.ToolResults()
		if strings.Contains(r.LastUser(), "[output check of skill report") {
			if len(res) == 0 {
				repairNote = r.LastUser() // one request at a time: no race
				return send(valid)
			}
			return fakeopenai.Response{}
		}
		switch {
		case strings.HasPrefix(r.LastUser(), "hello"):
			if len(res) == 0 {
				return send("not JSON at all")
			}
		case len(res) == 0:
			return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: tools.SkillsLoadName, Arguments: `{"id":"report"}`}}}
		case len(res) == 1:
			if !strings.Contains(res[0].Content, "checked before it reaches the chat") {
				t.Errorf("skills_load did not tell the model its output is checked: %s", res[0].Content)
			}
			return send(invalid)
		}
		return fakeopenai.Response{}
	})
	reply, _ := se.ask(t, "1", "status report please")
	if reply != valid {
		t.Errorf("the chat got %q; want only the repaired report", reply)
	}
	if !strings.Contains(repairNote, invalid) || !strings.Contains(repairNote, "status") {
		t.Errorf("repair note %q; want the output and what is wrong with it", repairNote)
	}
	// The check was that run's: the next one, without the skill, answers
	// as it likes.
	if reply, _ := se.ask(t, "1", "hello"); reply != valid+"\nnot JSON at all" {
		t.Errorf("the chat got %q; want the next run's answer unchecked", reply)
	}
}
