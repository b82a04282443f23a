package tools_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/policy"
	"github.com/shipmyagent/ship/runtime/skills"
	"github.com/shipmyagent/ship/tools"
)

// skillProject writes skills into a new project's .claude/skills: id →
// SKILL.md content.
func skillProject(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for rel, body := range files {
		p := filepath.Join(dir, ".claude", "skills", filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func skillTools(t *testing.T, dir string) (list, load agent.Tool) {
	t.Helper()
	cat, err := skills.New(skills.Options{ProjectDir: dir, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ts := tools.Skills(cat)
	return ts[0], ts[1]
}

// decode reads a tool result into a map.
func decode(t *testing.T, res agent.ToolResult) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(res.Content), &m); err != nil {
		t.Fatalf("result %q is not JSON: %v", res.Content, err)
	}
	return m
}

func TestSkillsListShowsEverySkill(t *testing.T) {
	dir := skillProject(t, map[string]string{
		"git-helper/SKILL.md": "---\nname: git\ndescription: Answer questions about the repository.\nallowed-tools: Bash(git:*)\n---\nUse git.\n",
		"writer/SKILL.md":     "---\ndescription: Write release notes.\n---\nWrite well.\n",
	})
	list, _ := skillTools(t, dir)
	if d := list.Definition(); d.Name != tools.SkillsListName {
		t.Errorf("name = %q", d.Name)
	}
	res := list.Call(context.Background(), json.RawMessage(`{}`))
	if !res.OK {
		t.Fatalf("skills_list failed: %s", res.Content)
	}
	var out struct {
		Skills []struct {
			ID, Name, Description string
			AllowedTools          []string
		}
		Count int
	}
	if err := json.Unmarshal([]byte(res.Content), &out); err != nil {
		t.Fatal(err)
	}
	if out.Count != 2 || len(out.Skills) != 2 {
		t.Fatalf("result = %s", res.Content)
	}
	g := out.Skills[0]
	if g.ID != "git-helper" || g.Name != "git" || g.Description != "Answer questions about the repository." ||
		!slices.Equal(g.AllowedTools, []string{"Bash(git:*)"}) {
		t.Errorf("git-helper = %+v", g)
	}
	if w := out.Skills[1]; w.ID != "writer" || w.Name != "writer" || w.AllowedTools != nil {
		t.Errorf("writer = %+v", w)
	}

	empty, _ := skillTools(t, t.TempDir())
	if res := empty.Call(context.Background(), nil); !res.OK || !strings.Contains(res.Content, ".claude/skills") {
		t.Errorf("no skills: %s, want a note saying where skills live", res.Content)
	}
}

func TestSkillsLoadReturnsInstructionsAndFiles(t *testing.T) {
	dir := skillProject(t, map[string]string{
		"writer/SKILL.md":         "---\ndescription: Write release notes.\n---\nRead template.md first.\n",
		"writer/template.md":      "# Release",
		"writer/scripts/check.sh": "true",
	})
	_, load := skillTools(t, dir)
	// No allowed-tools: nothing is limited.
	limits := &policy.RunLimits{}
	ctx := dispatch.WithRun(context.Background(), dispatch.Run{Limits: limits})
	res := load.Call(ctx, json.RawMessage(`{"id":"writer"}`))
	m := decode(t, res)
	if !res.OK || m["instructions"] != "Read template.md first.\n" {
		t.Fatalf("skills_load = %s", res.Content)
	}
	if files, _ := m["files"].([]any); len(files) != 2 || files[0] != "scripts/check.sh" || files[1] != "template.md" {
		t.Errorf("files = %v", m["files"])
	}
	if folder, _ := m["folder"].(string); !strings.HasSuffix(folder, filepath.Join(".claude", "skills", "writer")) {
		t.Errorf("folder = %q", folder)
	}
	if _, ok := m["limit"]; ok {
		t.Errorf("a skill without allowed-tools set a limit: %s", res.Content)
	}
	if ok, why := limits.Check(policy.Call{Tool: "exec_shell", Arg: "echo hi"}); !ok {
		t.Errorf("the run was limited: %s", why)
	}

	for _, args := range []string{`{}`, `{"id":""}`, `[1]`, `{"id":7}`} {
		if res := load.Call(ctx, json.RawMessage(args)); res.OK {
			t.Errorf("%s: %s, want a failure", args, res.Content)
		}
	}
	if res := load.Call(ctx, json.RawMessage(`{"id":"nope"}`)); res.OK || !strings.Contains(res.Content, "skills_list") {
		t.Errorf("unknown id: %s", res.Content)
	}
}

func TestSkillsLoadLimitsTheRunToTheSkillsTools(t *testing.T) {
	type call struct {
		tool, arg string
		ok        bool
	}
	cases := []struct {
		allowed string // the frontmatter line
		limit   string // the rules the result names
		dropped []string
		calls   []call
	}{
		{
			allowed: "allowed-tools: Bash(git:*)", limit: "exec_shell(git *), skills_*",
			calls: []call{{"exec_shell", "git status", true}, {"exec_shell", "echo hi", false},
				{"exec_shell", "git log; rm -rf /", false}, {"mcp.github.get_issue", "", false},
				{"chat_send", "", true}, {"skills_list", "", true}},
		},
		{
			allowed: "allowed-tools: Bash(git status:*), Bash(npm test)", limit: "exec_shell(git status*), exec_shell(npm test), skills_*",
			calls: []call{{"exec_shell", "git status -s", true}, {"exec_shell", "git push", false},
				{"exec_shell", "npm test", true}, {"exec_shell", "npm test --all", false}},
		},
		{
			allowed: "allowed-tools: Bash", limit: "exec_shell, skills_*",
			calls: []call{{"exec_shell", "echo hi", true}, {"mcp.x.y", "", false}},
		},
		{
			allowed: "allowed-tools: [mcp__github__get_issue, mcp__jira, Read]", limit: "mcp.github.get_issue, mcp.jira.*, skills_*",
			dropped: []string{"Read"},
			calls: []call{{"mcp.github.get_issue", "", true}, {"mcp.github.delete_repo", "", false},
				{"mcp.jira.create", "", true}, {"exec_shell", "ls", false}},
		},
		{
			allowed: "allowed-tools: Read, Grep, Glob, WebFetch", limit: "skills_*",
			dropped: []string{"Read", "Grep", "Glob", "WebFetch"},
			calls:   []call{{"exec_shell", "ls", false}, {"chat_send", "", true}, {"skills_load", "", true}, {"mcp.a.b", "", false}},
		},
		{
			// Ship's own names are taken as they are.
			allowed: "allowed-tools: exec_shell(make *)", limit: "exec_shell(make *), skills_*",
			calls: []call{{"exec_shell", "make test", true}, {"exec_shell", "rm x", false}},
		},
	}
	for _, c := range cases {
		t.Run(c.allowed, func(t *testing.T) {
			dir := skillProject(t, map[string]string{"s/SKILL.md": "---\ndescription: d\n" + c.allowed + "\n---\nbody\n"})
			_, load := skillTools(t, dir)
			limits := &policy.RunLimits{}
			ctx := dispatch.WithRun(context.Background(), dispatch.Run{Limits: limits})
			res := load.Call(ctx, json.RawMessage(`{"id":"s"}`))
			m := decode(t, res)
			if !res.OK {
				t.Fatalf("skills_load failed: %s", res.Content)
			}
			if limit, _ := m["limit"].(string); !strings.Contains(limit, "may use only "+c.limit+",") {
				t.Errorf("limit = %q, want it to name %q", limit, c.limit)
			}
			var dropped []string
			for _, d := range asSlice(m["droppedTools"]) {
				dropped = append(dropped, d.(string))
			}
			if !slices.Equal(dropped, c.dropped) {
				t.Errorf("dropped = %q, want %q", dropped, c.dropped)
			}
			for _, k := range c.calls {
				ok, why := limits.Check(policy.Call{Tool: k.tool, Arg: k.arg})
				if ok != k.ok {
					t.Errorf("%s %q allowed = %v (%s), want %v", k.tool, k.arg, ok, why, k.ok)
				}
				if !ok && !strings.Contains(why, "skill s") {
					t.Errorf("refusal %q does not name the skill", why)
				}
			}
		})
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func TestSkillsLoadOutsideARunSaysNoLimitApplies(t *testing.T) {
	dir := skillProject(t, map[string]string{"s/SKILL.md": "---\ndescription: d\nallowed-tools: Bash(git:*)\n---\nbody\n"})
	_, load := skillTools(t, dir)
	res := load.Call(context.Background(), json.RawMessage(`{"id":"s"}`))
	if m := decode(t, res); !res.OK || !strings.HasPrefix(m["limit"].(string), "none") {
		t.Errorf("outside a run: %s", res.Content)
	}
}
