package engine

import (
	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/policy"
)

// ToolInfo is one tool with its effective policy, as GET /api/tools shows
// it: a person can see why a call was allowed or refused.
type ToolInfo struct {
	Name string `json:"name"`
	// ModelName is the function name the model calls the tool by, when it
	// differs from Name (MCP tools).
	ModelName   string         `json:"modelName,omitempty"`
	Description string         `json:"description"`
	Default     policy.Verdict `json:"default"` // where no rule decides
	// Offered says whether the model sees the tool at all, for the chat
	// and user asked about.
	Offered bool `json:"offered"`
	// TakesCommand: rules may name its commands ("exec_shell(git *)").
	TakesCommand bool          `json:"takesCommand"`
	Rules        []policy.Rule `json:"rules"` // the rules that name it, highest layer first
	// Decision is the verdict on a call: for a tool that takes a command,
	// only when one was given.
	Decision *policy.Decision `json:"decision,omitempty"`
}

// ToolsReport is the effective policy of every tool for one chat and
// person.
type ToolsReport struct {
	ChatKey string `json:"chatKey,omitempty"`
	// ChatType is the chat type the defaults were judged for: "api" for an
	// api chat, else "group", since a platform's chat key alone does not
	// say whether it is a group and groups are the safer guess.
	ChatType   string     `json:"chatType"`
	User       string     `json:"user,omitempty"`
	Roles      []string   `json:"roles"`
	CanApprove bool       `json:"canApprove"`
	Tools      []ToolInfo `json:"tools"`
}

// Tools reports each tool with its description and the policy in force
// for user ("channel:userId") in chatKey, both optional; command, when
// set, is judged for the tools that take one.
func (e *Engine) Tools(chatKey, user, command string) ToolsReport {
	pol := e.gov.current()
	subj := policy.Subject{Identity: user, ChatKey: chatKey}
	req := dispatch.RequestContext{ChatKey: chatKey, ChatType: reportChatType(chatKey)}
	rep := ToolsReport{ChatKey: chatKey, ChatType: req.ChatType, User: user, Roles: pol.Roles(user), CanApprove: pol.CanApprove(user), Tools: []ToolInfo{}}
	if rep.Roles == nil {
		rep.Roles = []string{}
	}
	for _, t := range e.runtime.Tools() {
		def := t.Definition()
		// The policy, and so this report, names a tool by its policy name
		// ("mcp.github.create_issue"), whatever the model calls it.
		name := agent.PolicyName(t)
		_, liner := e.gov.liners[name]
		info := ToolInfo{
			Name: name, Description: def.Description, Default: defaultVerdict(name, req),
			Offered: pol.Offered(subj, name, policy.Narrowing{}, defaultVerdict(name, req)), TakesCommand: liner,
			Rules: pol.Rules(subj, name),
		}
		if name != def.Name {
			info.ModelName = def.Name
		}
		if !liner || command != "" {
			call := policy.Call{Tool: name}
			if liner {
				call.Arg = command
			}
			d := pol.Decide(subj, call, policy.Narrowing{}, defaultVerdict(name, req))
			info.Decision = &d
		}
		rep.Tools = append(rep.Tools, info)
	}
	return rep
}

// reportChatType is the chat type a run in chatKey has, as far as the key
// tells: every api chat is of type "api" (the API's only kind); a platform
// key does not say whether the chat is a group, and groups are the safer
// guess for the defaults that depend on it.
func reportChatType(chatKey string) string {
	if _, ok := chat.APIChatID(chatKey); ok {
		return chat.ChatTypeAPI
	}
	return "group"
}

// Sandboxed is a tool that runs commands in a sandbox (exec_shell). Its
// state is of the tool's own type (package tools, which the core may not
// import), so the engine passes it on unread: GET /api/tools shows it as
// JSON.
type Sandboxed interface{ SandboxState() any }

// Sandbox is the state of the first tool that runs commands in a sandbox;
// ok is false when no tool does.
func (e *Engine) Sandbox() (state any, ok bool) {
	for _, t := range e.runtime.Tools() {
		if sb, isSandboxed := t.(Sandboxed); isSandboxed {
			return sb.SandboxState(), true
		}
	}
	return nil, false
}
