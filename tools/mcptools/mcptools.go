// Package mcptools offers the tools of MCP servers to the model: an
// agent.Toolbox whose tools are those the mcp.Manager has now, each under a
// function name providers accept ("mcp__github__create_issue") and known to
// the tool policy by its policy name ("mcp.github.create_issue").
package mcptools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/mcp"
)

// Source is what the toolbox needs of the MCP side (an *mcp.Manager).
type Source interface {
	Tools() []mcp.Tool
	CallTool(ctx context.Context, server, tool string, args json.RawMessage) (mcp.Result, error)
	// CallToolWithin is CallTool with its own timeout (a background
	// job's) instead of the server's.
	CallToolWithin(ctx context.Context, server, tool string, args json.RawMessage, timeout time.Duration) (mcp.Result, error)
}

// Toolbox is the agent.Toolbox of the MCP servers' tools.
type Toolbox struct {
	src  Source
	log  zerolog.Logger
	opts Options
}

// New returns the toolbox of src's tools; every call runs in the turn.
func New(src Source, log zerolog.Logger) *Toolbox {
	return &Toolbox{src: src, log: log}
}

// NewWith returns the toolbox of src's tools, the calls that
// opts.Background names running as background jobs.
func NewWith(src Source, log zerolog.Logger, opts Options) *Toolbox {
	return &Toolbox{src: src, log: log, opts: opts}
}

// Tools implements agent.Toolbox: one tool per MCP tool the servers offer
// now (a run takes them when it starts).
func (b *Toolbox) Tools() []agent.Tool {
	list := b.src.Tools()
	_, names := newTable(list)
	out := make([]agent.Tool, 0, len(list))
	for i, t := range list {
		out = append(out, &Tool{src: b.src, tool: t, log: b.log, bg: b.background(t), def: llms.FunctionDefinition{
			Name:        names[i],
			Description: description(t),
			Parameters:  parameters(t.InputSchema),
		}})
	}
	return out
}

// Lookup says which server and tool a function name stands for now.
func (b *Toolbox) Lookup(name string) (server, tool string, ok bool) {
	t, _ := newTable(b.src.Tools())
	tl, ok := t[name]
	return tl.Server, tl.Name, ok
}

// Tool is one MCP tool offered to the model.
type Tool struct {
	src  Source
	tool mcp.Tool
	def  llms.FunctionDefinition
	log  zerolog.Logger
	// bg runs every call as a background job; nil runs it in the turn.
	bg *background
}

// Definition implements agent.Tool.
func (t *Tool) Definition() llms.FunctionDefinition { return t.def }

// PolicyName implements agent.PolicyNamer: "mcp.<server>.<tool>".
func (t *Tool) PolicyName() string { return PolicyName(t.tool.Server, t.tool.Name) }

// Call implements agent.Tool: the server's text passes through; a tool
// that failed, a server that is down or slow gives a failed result that
// says so.
func (t *Tool) Call(ctx context.Context, args json.RawMessage) agent.ToolResult {
	if t.bg != nil {
		return t.startJob(ctx, args)
	}
	res, err := t.src.CallTool(ctx, t.tool.Server, t.tool.Name, args)
	return t.result(res, err)
}

// result words a call's outcome for the model.
func (t *Tool) result(res mcp.Result, err error) agent.ToolResult {
	switch {
	case err != nil:
		t.log.Warn().Str("tool", t.PolicyName()).Str("server", t.tool.Server).Str("error", err.Error()).Msg("mcp tool call did not complete")
		return failure(err.Error())
	case res.IsError:
		return failure(res.Text)
	case res.Text == "":
		return agent.ToolResult{Content: "(the tool returned nothing)", OK: true}
	}
	return agent.ToolResult{Content: res.Text, OK: true}
}

func failure(msg string) agent.ToolResult {
	b, err := json.Marshal(map[string]any{"success": false, "error": msg})
	if err != nil {
		b = []byte(`{"success":false,"error":"the tool failed"}`)
	}
	return agent.ToolResult{Content: string(b)}
}

func description(t mcp.Tool) string {
	if t.Description != "" {
		return t.Description
	}
	return fmt.Sprintf("Tool %s of the MCP server %s.", t.Name, t.Server)
}

// parameters passes the server's input schema through as the function's
// parameters. It may be one providers refuse ({"type":"object"} without
// "properties" is usual for a tool without arguments): the runtime fits
// every tool's schema to them (llm.ToolParameters) on the way to the model.
// An unreadable one (it cannot be sent at all) is none.
func parameters(schema json.RawMessage) any {
	if !json.Valid(schema) {
		return nil
	}
	return json.RawMessage(bytes.Clone(schema))
}
