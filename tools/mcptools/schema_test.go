package mcptools_test

import (
	"encoding/json"
	"testing"

	"github.com/shipmyagent/ship/internal/fakemcp"
	"github.com/shipmyagent/ship/runtime/config"
)

// A stdio MCP server's tool without arguments comes with the input schema
// {"type":"object"}, which MCP allows and OpenAI refuses ("object schema
// missing properties", for the whole request). With the tool allowed,
// every message would fail; the fake model checks schemas as OpenAI does.
func TestNoArgumentMCPToolDoesNotBreakTheModel(t *testing.T) {
	bin, err := fakemcp.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := newRigWith(t, `{"allow": ["mcp.fake.ping"]}`, config.MCPServer{Command: bin})

	// A normal turn, with the tool offered.
	o := r.ask("1", "m1", "u1", `call chat_send {"text":"hi"}`)
	if o.Err != nil || !o.Result.Success {
		t.Fatalf("a plain turn: %+v", o)
	}
	first := r.fake.Requests()[0]
	if !first.HasTool("mcp__fake__ping") {
		t.Fatalf("ping not offered: %v", names(first.Tools))
	}
	for _, tl := range first.Tools {
		if tl.Name != "mcp__fake__ping" {
			continue
		}
		var schema map[string]any
		if err := json.Unmarshal(tl.Parameters, &schema); err != nil {
			t.Fatal(err)
		}
		if props, ok := schema["properties"].(map[string]any); schema["type"] != "object" || !ok || len(props) != 0 {
			t.Errorf("ping offered with %s", tl.Parameters)
		}
	}

	// The tool runs and its result reaches the reply.
	o = r.ask("1", "m2", "u1", `call mcp__fake__ping {}`)
	if o.Err != nil || !o.Result.Success || o.Result.Output != "result: pong" {
		t.Fatalf("calling ping: %+v", o)
	}
	if len(o.Result.ToolCalls) != 1 || o.Result.ToolCalls[0].Tool != "mcp.fake.ping" || o.Result.ToolCalls[0].Output != "pong" {
		t.Errorf("tool calls %+v", o.Result.ToolCalls)
	}
}
