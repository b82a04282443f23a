package config

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

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
	// Cwd is the stdio server's working folder, relative to the project
	// folder; "" is the project folder.
	Cwd     string            `json:"cwd,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// TimeoutSeconds bounds one tool call; 0 → DefaultMCPCallTimeout.
	TimeoutSeconds int `json:"timeoutSeconds,omitempty"`
	// Background names the server's tools (its own names; "build_*" is a
	// prefix) whose calls always run as background jobs, bounded by
	// tools.jobs rather than TimeoutSeconds.
	Background []string `json:"background,omitempty"`
}

// DefaultMCPCallTimeout bounds a tool call of a server without
// timeoutSeconds.
const DefaultMCPCallTimeout = 60 * time.Second

// maxMCPTimeoutSeconds keeps a call inside the default run timeout.
const maxMCPTimeoutSeconds = 600

// maxMCPServerName is how long a server's name may be; it becomes part of
// tool names ("mcp.<server>.<tool>" for the policy, "mcp__<server>__<tool>"
// for the model), which allow only isName's characters.
const maxMCPServerName = 32

// CallTimeout is how long one tool call of the server may take.
func (s MCPServer) CallTimeout() time.Duration {
	if s.TimeoutSeconds <= 0 {
		return DefaultMCPCallTimeout
	}
	return time.Duration(s.TimeoutSeconds) * time.Second
}

// Transport is "stdio" or "http".
func (s MCPServer) Transport() string {
	if s.URL != "" {
		return "http"
	}
	return "stdio"
}

// Validate checks every server: a usable name, exactly one of command and
// url, an http(s) url. Errors name the server and the field, never a value
// that may be secret (env and header values).
func (c MCPConfig) Validate() error {
	names := make([]string, 0, len(c.Servers))
	for name := range c.Servers {
		names = append(names, name)
	}
	slices.Sort(names) // the same mistake gives the same message every time
	for _, name := range names {
		if err := c.Servers[name].validate(name); err != nil {
			return err
		}
	}
	return nil
}

func (s MCPServer) validate(name string) error {
	where := fmt.Sprintf("mcp.servers.%q", name)
	if !isName(name, maxMCPServerName) {
		return fmt.Errorf("%w: %s: a server name is 1 to 32 letters, digits, _ or -", ErrInvalid, where)
	}
	switch {
	case s.Command == "" && s.URL == "":
		return fmt.Errorf("%w: %s needs \"command\" (a stdio server) or \"url\" (an HTTP server)", ErrInvalid, where)
	case s.Command != "" && s.URL != "":
		return fmt.Errorf("%w: %s has both \"command\" and \"url\"; keep one", ErrInvalid, where)
	}
	if s.TimeoutSeconds < 0 || s.TimeoutSeconds > maxMCPTimeoutSeconds {
		return fmt.Errorf("%w: %s.timeoutSeconds is %d; it must be between 1 and %d (default %d)",
			ErrInvalid, where, s.TimeoutSeconds, maxMCPTimeoutSeconds, int(DefaultMCPCallTimeout/time.Second))
	}
	if err := validBackground(s.Background); err != nil {
		return fmt.Errorf("%w: %s.background: %w", ErrInvalid, where, err)
	}
	if s.Command != "" {
		if len(s.Headers) > 0 {
			return fmt.Errorf("%w: %s: \"headers\" are for HTTP servers; a stdio server takes \"env\"", ErrInvalid, where)
		}
		for k := range s.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				return fmt.Errorf("%w: %s.env has a variable name that is empty or contains = or NUL", ErrInvalid, where)
			}
		}
		return nil
	}
	if len(s.Args) > 0 || len(s.Env) > 0 || s.Cwd != "" {
		return fmt.Errorf("%w: %s: \"args\", \"env\" and \"cwd\" are for stdio servers (\"command\"), not \"url\"", ErrInvalid, where)
	}
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// The URL itself is not repeated: it may carry a key.
		return fmt.Errorf("%w: %s.url must be an http:// or https:// address", ErrInvalid, where)
	}
	for k, v := range s.Headers {
		if k == "" || strings.ContainsAny(k, " :\r\n") {
			return fmt.Errorf("%w: %s.headers has an invalid header name %q", ErrInvalid, where, k)
		}
		if strings.TrimSpace(v) == "" {
			return fmt.Errorf("%w: %s.headers.%s is empty (is its \"${VAR}\" set?)", ErrInvalid, where, k)
		}
		if strings.ContainsAny(v, "\r\n") {
			return fmt.Errorf("%w: %s.headers.%s contains a line break", ErrInvalid, where, k)
		}
	}
	return nil
}
