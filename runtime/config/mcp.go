package config

// MCPConfig is the "mcp" section of ship.json: the MCP servers whose tools
// the model may be offered (the tool policy still decides).
type MCPConfig struct {
	Servers map[string]MCPServer `json:"servers,omitempty"`
}

// MCPServer is one MCP server: stdio (Command) or streamable HTTP (URL).
type MCPServer struct {
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}
