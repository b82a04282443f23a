package agent

import (
	"maps"
	"slices"
	"strings"

	"github.com/rs/zerolog"
	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/runtime/llm"
)

// runTools returns the tools of one run: the fixed ones and what the
// toolboxes offer now.
func (r *Runtime) runTools(log zerolog.Logger) ([]llms.Tool, map[string]Tool) {
	var extra []Tool
	for _, tb := range r.opts.Toolboxes {
		extra = append(extra, tb.Tools()...)
	}
	if len(extra) == 0 {
		// No copies while no toolbox offers anything (ship runs an empty
		// MCP toolbox so that a reload can add servers).
		return r.toolDefs, r.tools
	}
	defs := slices.Clone(r.toolDefs)
	byName := maps.Clone(r.tools)
	for _, t := range extra {
		def := t.Definition()
		if _, dup := byName[def.Name]; dup {
			log.Warn().Str("tool", def.Name).Msg("a tool of that name exists already; skipped")
			continue
		}
		byName[def.Name] = t
		defs = append(defs, modelTool(def))
	}
	return defs, byName
}

// modelTool is a tool definition as the model is offered it: the one
// place every tool, ship's own and the toolboxes' (MCP), passes on its way
// to a provider, so the one place its parameters schema is made
// acceptable to every provider (llm.ToolParameters).
func modelTool(def llms.FunctionDefinition) llms.Tool {
	def.Parameters = llm.ToolParameters(def.Parameters)
	return llms.Tool{Type: "function", Function: &def}
}

// Tools lists every tool a run would have now (fixed and from toolboxes),
// for GET /api/tools.
func (r *Runtime) Tools() []Tool {
	_, byName := r.runTools(r.opts.Logger)
	out := make([]Tool, 0, len(byName))
	for _, t := range byName {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b Tool) int { return strings.Compare(a.Definition().Name, b.Definition().Name) })
	return out
}
