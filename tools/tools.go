// Package tools holds the tools offered to the model. Each finds the run it
// serves through the context: the dispatch.RequestContext (where the message
// came from), the chat.Registry (how to reach that platform) and the
// agent.ToolExecutionContext (the in-flight messages).
package tools

import (
	"encoding/json"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
)

// Default returns the tools every channel offers: chat_send and
// chat_load_history.
func Default(store chat.Log, d *dispatch.Deliverer) []agent.Tool {
	return []agent.Tool{&ChatSend{Deliverer: d}, &ChatLoadHistory{Store: store}}
}

// result encodes a tool's answer to the model.
func result(ok bool, fields map[string]any) agent.ToolResult {
	if fields == nil {
		fields = map[string]any{}
	}
	fields["success"] = ok
	b, err := json.Marshal(fields)
	if err != nil {
		b = []byte(`{"success":false,"error":"encoding the result failed"}`)
		ok = false
	}
	return agent.ToolResult{Content: string(b), OK: ok}
}

func failure(msg string) agent.ToolResult {
	return result(false, map[string]any{"error": msg})
}
