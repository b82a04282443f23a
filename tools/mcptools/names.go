package mcptools

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/shipmyagent/ship/runtime/mcp"
)

// maxNameLen is the longest function name providers accept.
const maxNameLen = 64

// PolicyName is how the tool policy names an MCP tool:
// "mcp.<server>.<tool>", so a rule like "mcp.github.*" covers a server.
func PolicyName(server, tool string) string { return "mcp." + server + "." + tool }

// modelName is the function name the model sees for an MCP tool:
// "mcp__<server>__<tool>" when that is a valid name
// (^[a-zA-Z0-9_-]{1,64}$), else the same with every other character made
// "_", cut to fit, and a short hash of the policy name appended, so
// "a.b" and "a_b" stay apart. It depends on the tool alone, never on the
// other tools, so a name the model saw earlier in a chat still means the
// same tool.
func modelName(server, tool string) string {
	base := "mcp__" + server + "__" + sanitize(tool)
	if sanitize(tool) == tool && len(base) <= maxNameLen {
		return base
	}
	return hashed(base, PolicyName(server, tool))
}

// hashed cuts base so that "_" and 8 hex digits of key's hash fit.
func hashed(base, key string) string {
	sum := sha256.Sum256([]byte(key))
	suffix := "_" + hex.EncodeToString(sum[:4])
	if len(base) > maxNameLen-len(suffix) {
		base = base[:maxNameLen-len(suffix)]
	}
	return base + suffix
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, s)
}

// table maps function names to MCP tools for one set of tools.
type table map[string]mcp.Tool

// newTable names every tool. Names only clash when server names meet
// tool names at "__" (server "a" with tool "b__c", server "a__b" with
// tool "c"); tools are taken in order (by server, then name) and a later
// one that clashes gets a hashed name.
func newTable(tools []mcp.Tool) (table, []string) {
	t := make(table, len(tools))
	names := make([]string, len(tools))
	for i, tl := range tools {
		name := modelName(tl.Server, tl.Name)
		for n := 0; ; n++ {
			if _, taken := t[name]; !taken {
				break
			}
			key := PolicyName(tl.Server, tl.Name) + strings.Repeat("#", n+1)
			name = hashed("mcp__"+tl.Server+"__"+sanitize(tl.Name), key)
		}
		t[name] = tl
		names[i] = name
	}
	return t, names
}
