package main_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/shipmyagent/ship/internal/fakeopenai"
)

// tinyPNG is a valid 1×1 PNG, as a command would draw a chart.
const tinyPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

func tinyPNGBytes() []byte {
	b, _ := base64.StdEncoding.DecodeString(tinyPNG) // a constant that decodes
	return b
}

// showModel is a model that shows more than text, as the README's tools
// describe:
//   - "chart": exec_shell draws out/chart.png, then chat_send_file sends it
//     with a Markdown caption;
//   - "passwd": chat_send_file of /etc/passwd (refused);
//   - "deploy": chat_ask with three choices;
//   - "format": a Markdown reply (bold, code, a link, a list);
//   - anything else: "echo: <text>".
//
// After a tool result it ends its turn, except that after drawing the
// chart it sends it.
func showModel(r fakeopenai.Request) fakeopenai.Response {
	call := func(name string, args any) fakeopenai.Response {
		b, _ := json.Marshal(args) // maps of strings and slices always encode
		return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: name, Arguments: string(b)}}}
	}
	if res := r.ToolResults(); len(res) > 0 {
		last := res[len(res)-1].Content
		if strings.Contains(last, `"exitCode":0`) {
			return call("chat_send_file", map[string]any{"paths": []string{"out/chart.png"}, "caption": "**Weekly** chart"})
		}
		return fakeopenai.Response{}
	}
	text := r.LastUser()
	switch {
	case strings.Contains(text, "chart"):
		return call("exec_shell", map[string]string{"command": "mkdir -p out && echo " + tinyPNG + " | base64 -d > out/chart.png"})
	case strings.Contains(text, "passwd"):
		return call("chat_send_file", map[string]any{"paths": []string{"/etc/passwd"}})
	case strings.Contains(text, "deploy"):
		return call("chat_ask", map[string]any{"question": "Deploy **where**?", "choices": []string{"staging", "production", "nowhere"}})
	case strings.Contains(text, "format"):
		return call("chat_send", map[string]string{"text": formattedReply})
	}
	return call("chat_send", map[string]string{"text": "echo: " + text})
}

// formattedReply is Markdown as models write it.
const formattedReply = "Here is **the plan**:\n\n1. run `make test`\n2. read [the docs](https://example.com/a_(b))\n\n```go\nfmt.Println(\"<ok>\")\n```"

// toolOutputs are the results of every tool call the fake model saw.
func toolOutputs(fake *fakeopenai.Server) []string {
	var out []string
	for _, r := range fake.Requests() {
		for _, m := range r.ToolResults() {
			out = append(out, m.Content)
		}
	}
	return out
}
