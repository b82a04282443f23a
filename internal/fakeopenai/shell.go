package fakeopenai

import (
	"encoding/json"
	"strings"
)

// RunCommands is a scripted model that does what it is asked, for tests of
// tools and their policy. A last user message "run: CMD" calls exec_shell
// with {"command": CMD}, or says "no shell" through chat_send when the
// request does not offer exec_shell. With a tool result after the last user
// message it reports the last one through chat_send as "result: <content>"
// (so a call that was refused, or that ran after an approval, is visible in
// the chat); after its own chat_send it ends the turn. "tell NAME: TEXT"
// calls chat_contact_send (or says "no contacts" when it is not offered).
// "bg: CMD" calls exec_shell with {"command": CMD, "background": true}.
// Any other message is echoed as "echo: <text>".
func RunCommands(r Request) Response {
	if lastCall(r) == "chat_send" {
		return Response{}
	}
	say := func(text string) Response {
		args, _ := json.Marshal(map[string]string{"text": text}) // a string map always encodes
		return Response{ToolCalls: []ToolCall{{Name: "chat_send", Arguments: string(args)}}}
	}
	if res := r.ToolResults(); len(res) > 0 {
		return say("result: " + res[len(res)-1].Content)
	}
	if rest, ok := strings.CutPrefix(r.LastUser(), "tell "); ok {
		name, text, _ := strings.Cut(rest, ": ")
		if !r.HasTool("chat_contact_send") {
			return say("no contacts")
		}
		args, _ := json.Marshal(map[string]string{"username": name, "text": text})
		return Response{ToolCalls: []ToolCall{{Name: "chat_contact_send", Arguments: string(args)}}}
	}
	cmd, ok := strings.CutPrefix(r.LastUser(), "run: ")
	bg, isBackground := strings.CutPrefix(r.LastUser(), "bg: ")
	if isBackground && r.HasTool("exec_shell") {
		args, _ := json.Marshal(map[string]any{"command": bg, "background": true})
		return Response{ToolCalls: []ToolCall{{Name: "exec_shell", Arguments: string(args)}}}
	}
	if !ok {
		return say("echo: " + r.LastUser())
	}
	if !r.HasTool("exec_shell") {
		return say("no shell")
	}
	args, _ := json.Marshal(map[string]string{"command": cmd})
	return Response{ToolCalls: []ToolCall{{Name: "exec_shell", Arguments: string(args)}}}
}

// lastCall is the name of the last tool called after the last user
// message, "" when none was.
func lastCall(r Request) string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		switch m := r.Messages[i]; {
		case m.Role == "user":
			return ""
		case m.Role == "assistant" && len(m.ToolCalls) > 0:
			return m.ToolCalls[len(m.ToolCalls)-1].Name
		}
	}
	return ""
}
