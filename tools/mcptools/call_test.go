package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/mcp"
)

// source answers every call with res, err and remembers the last call.
type source struct {
	res  mcp.Result
	err  error
	last string
}

func (s *source) Tools() []mcp.Tool {
	return []mcp.Tool{{Server: "gh", Name: "repo.get", Description: "", InputSchema: json.RawMessage(`{"type":"object"}`)}}
}

func (s *source) CallTool(_ context.Context, server, tool string, args json.RawMessage) (mcp.Result, error) {
	s.last = server + "/" + tool + " " + string(args)
	return s.res, s.err
}

func (s *source) CallToolWithin(ctx context.Context, server, tool string, args json.RawMessage, _ time.Duration) (mcp.Result, error) {
	return s.CallTool(ctx, server, tool, args)
}

func TestCallResults(t *testing.T) {
	cases := map[string]struct {
		res  mcp.Result
		err  error
		want agent.ToolResult
	}{
		"text":     {res: mcp.Result{Text: "ok text"}, want: agent.ToolResult{Content: "ok text", OK: true}},
		"nothing":  {want: agent.ToolResult{Content: "(the tool returned nothing)", OK: true}},
		"is error": {res: mcp.Result{Text: "no such repo", IsError: true}, want: agent.ToolResult{Content: `{"error":"no such repo","success":false}`}},
		"down": {err: errors.New("mcp server gh is down: connecting; try later"),
			want: agent.ToolResult{Content: `{"error":"mcp server gh is down: connecting; try later","success":false}`}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			src := &source{res: c.res, err: c.err}
			tools := New(src, zerolog.Nop()).Tools()
			if len(tools) != 1 {
				t.Fatalf("tools = %d", len(tools))
			}
			tl := tools[0]
			if d := tl.Definition(); d.Description != "Tool repo.get of the MCP server gh." || agent.PolicyName(tl) != "mcp.gh.repo.get" {
				t.Errorf("definition %+v, policy name %q", d, agent.PolicyName(tl))
			}
			if got := tl.Call(context.Background(), json.RawMessage(`{"id":1}`)); got != c.want {
				t.Errorf("Call = %+v, want %+v", got, c.want)
			}
			if src.last != `gh/repo.get {"id":1}` {
				t.Errorf("the server got %q", src.last)
			}
		})
	}
	b := New(&source{}, zerolog.Nop())
	name := b.Tools()[0].Definition().Name
	if server, tool, ok := b.Lookup(name); !ok || server != "gh" || tool != "repo.get" {
		t.Errorf("Lookup(%q) = %q, %q, %v", name, server, tool, ok)
	}
}
