package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/policy"
	"github.com/shipmyagent/ship/runtime/skills"
	"github.com/shipmyagent/ship/runtime/turn"
)

// Names of the skill tools. The policy allows skills_* unless a rule says
// otherwise: reading instructions acts on nothing.
const (
	SkillsListName = "skills_list"
	SkillsLoadName = "skills_load"
)

// maxSkillsListBytes bounds skills_list's answer (descriptions are up to
// 1 KiB each).
const maxSkillsListBytes = 64 << 10

// skillsRule keeps the skill tools usable under a skill's limit: the model
// may still look up and load other skills (each adding its own limit).
const skillsRule = "skills_*"

// Skills returns skills_list and skills_load over the catalog.
func Skills(c *skills.Catalog) []agent.Tool {
	return []agent.Tool{&SkillsList{Catalog: c}, &SkillsLoad{Catalog: c}}
}

// SkillsList is the skills_list tool: every skill with its description.
type SkillsList struct {
	Catalog *skills.Catalog
}

// Definition describes skills_list to the model.
func (t *SkillsList) Definition() llms.FunctionDefinition {
	return llms.FunctionDefinition{
		Name: SkillsListName,
		Description: "List the skills: instructions for particular tasks, each with an id, a name, a description of when to use it " +
			"and the tools it limits the run to. Load one with skills_load.",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{}},
	}
}

// Call lists the skills.
func (t *SkillsList) Call(_ context.Context, _ json.RawMessage) agent.ToolResult {
	type entry struct {
		ID           string   `json:"id"`
		Name         string   `json:"name"`
		Description  string   `json:"description"`
		AllowedTools []string `json:"allowedTools,omitempty"`
	}
	list := t.Catalog.List()
	out := make([]entry, 0, len(list))
	size := 0
	for _, s := range list {
		e := entry{ID: s.ID, Name: s.Name, Description: s.Description, AllowedTools: s.AllowedTools}
		size += len(e.ID) + len(e.Name) + len(e.Description) + 64
		for _, a := range e.AllowedTools {
			size += len(a) + 3
		}
		if size > maxSkillsListBytes {
			break
		}
		out = append(out, e)
	}
	fields := map[string]any{"skills": out, "count": len(list)}
	if n := len(list) - len(out); n > 0 {
		fields["note"] = fmt.Sprintf("%d more skills are not shown: the list is too long", n)
	}
	if len(list) == 0 {
		fields["note"] = "there are no skills: they live in .claude/skills/<id>/SKILL.md of the project"
	}
	return result(true, fields)
}

// SkillsLoad is the skills_load tool: a skill's instructions and the names
// of its other files. A skill with allowed-tools limits the rest of the
// run to those tools (in ship's names).
type SkillsLoad struct {
	Catalog *skills.Catalog
}

// Definition describes skills_load to the model.
func (t *SkillsLoad) Definition() llms.FunctionDefinition {
	return llms.FunctionDefinition{
		Name: SkillsLoadName,
		Description: "Load a skill: its instructions (follow them) and the names of its other files (read them when the instructions say so). " +
			"A skill with allowed-tools limits the rest of this run to those tools.",
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"id": map[string]any{"type": "string", "description": "The skill's id or name, as skills_list or the system prompt shows it."},
			},
			"required": []string{"id"},
		},
	}
}

// Call loads the skill and applies its limit.
func (t *SkillsLoad) Call(ctx context.Context, args json.RawMessage) agent.ToolResult {
	var in struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(args, &in); err != nil || strings.TrimSpace(in.ID) == "" {
		return failure("arguments must be an object with a string field id")
	}
	s, err := t.Catalog.Load(in.ID)
	if errors.Is(err, skills.ErrNotFound) {
		return failure(fmt.Sprintf("there is no skill %q; skills_list shows them", in.ID))
	}
	if err != nil {
		return failure(err.Error())
	}
	fields := map[string]any{
		"id": s.ID, "name": s.Name, "description": s.Description,
		"folder": s.Dir, "instructions": s.Body, "files": orEmpty(s.Files),
	}
	if s.BodyCut > 0 {
		fields["instructionsCut"] = fmt.Sprintf("… %d bytes cut; read the rest from %s/%s", s.BodyCut, s.Dir, skills.FileName)
	}
	if s.MoreFiles > 0 {
		fields["moreFiles"] = s.MoreFiles
	}
	if len(s.AllowedTools) > 0 {
		fields["allowedTools"] = s.AllowedTools
		limitRun(ctx, s, fields)
	}
	if s.OutputSchema != "" {
		guardOutput(ctx, s, fields)
	}
	return result(true, fields)
}

// limitRun limits the rest of the run to the skill's allowed tools and
// tells the model which limit applies.
func limitRun(ctx context.Context, s skills.Skill, fields map[string]any) {
	rules, dropped := shipRules(s.AllowedTools)
	// A rule the policy cannot read is dropped too: leaving it out narrows
	// the limit, it never widens it.
	valid := rules[:0]
	for _, r := range rules {
		if err := (&policy.RunLimits{}).Limit("check", []string{r}); err != nil {
			dropped = append(dropped, r)
			continue
		}
		valid = append(valid, r)
	}
	rules = append(valid, skillsRule)
	if len(dropped) > 0 {
		fields["droppedTools"] = dropped
		fields["droppedNote"] = "these allowed-tools are not available in this run: ship has no equivalent (no Read, Write, Edit, Glob, Grep or web tools of its own) or cannot read the entry"
	}
	by := "skill " + s.ID
	err := policy.ErrNoRun
	if run, _ := dispatch.RunFrom(ctx); run.Limits != nil {
		err = run.Limits.Limit(by, rules)
	}
	switch {
	case errors.Is(err, policy.ErrNoRun):
		fields["limit"] = "none: this call is outside a governed run"
	case err != nil:
		fields["limit"] = "none: " + err.Error()
	default:
		fields["limit"] = fmt.Sprintf("the rest of this run may use only %s, plus the chat_* tools (the tool policy still applies too)", strings.Join(rules, ", "))
	}
}

// guardOutput arms the run's output guardrail with the skill's schema:
// from now on the run's replies are held and checked before they are sent.
func guardOutput(ctx context.Context, s skills.Skill, fields map[string]any) {
	fields["outputSchema"] = json.RawMessage(s.OutputSchema)
	h := dispatch.HoldFrom(ctx)
	if h == nil {
		fields["outputCheck"] = "none: this call is outside a governed run"
		return
	}
	h.Arm(turn.OutputCheck{Kind: turn.CheckSkill, Name: s.ID, Schema: json.RawMessage(s.OutputSchema)})
	fields["outputCheck"] = "your final output must be one JSON document matching outputSchema, sent alone with chat_send; it is checked before it reaches the chat"
}

// shipRules maps Claude Code tool names to ship's policy rules: Bash is
// exec_shell (Bash(git:*) is exec_shell(git *)), mcp__server__tool is
// mcp.server.tool, a name already in ship's style (exec_shell(...),
// mcp.x.y, chat_*) is kept, and the rest (Read, Write, Edit, Glob, Grep,
// WebFetch...) has no equivalent and is dropped.
func shipRules(allowed []string) (rules, dropped []string) {
	add := func(r string) {
		if !slices.Contains(rules, r) {
			rules = append(rules, r)
		}
	}
	for _, a := range allowed {
		name, arg, hasArg := strings.Cut(a, "(")
		if hasArg {
			var closed bool
			arg, closed = strings.CutSuffix(arg, ")")
			if !closed {
				dropped = append(dropped, a)
				continue
			}
		}
		first, _ := utf8.DecodeRuneInString(name)
		switch {
		case name == "Bash":
			add(bashRule(arg))
		case strings.HasPrefix(name, "mcp__") && !hasArg:
			server, tool, _ := strings.Cut(strings.TrimPrefix(name, "mcp__"), "__")
			if server == "" {
				dropped = append(dropped, a)
				continue
			}
			if tool == "" {
				tool = "*"
			}
			add("mcp." + server + "." + tool)
		case unicode.IsUpper(first), strings.HasPrefix(name, "mcp__"):
			dropped = append(dropped, a)
		default:
			add(a)
		}
	}
	return rules, dropped
}

// bashRule maps a Bash(...) argument: Claude Code's "cmd:*" (cmd and
// whatever follows) becomes "cmd *" for one word, "cmd words*" for more.
func bashRule(arg string) string {
	arg = strings.TrimSpace(arg)
	prefix, isPrefix := strings.CutSuffix(arg, ":*")
	prefix = strings.TrimSpace(prefix)
	switch {
	case arg == "" || arg == "*" || (isPrefix && prefix == ""):
		return ExecShellName
	case !isPrefix:
		return ExecShellName + "(" + arg + ")"
	case strings.ContainsAny(prefix, " \t"):
		return ExecShellName + "(" + prefix + "*)"
	}
	return ExecShellName + "(" + prefix + " *)"
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
