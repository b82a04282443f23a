package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestMCPServersAreReadWithVariablesExpanded(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, FileName, `{"mcp": {"servers": {
	  "files": {"command": "npx", "args": ["-y", "some-server"], "env": {"ROOT": "/srv"}, "cwd": "tools"},
	  "github": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "${GH_AUTH}"}, "timeoutSeconds": 20}
	}}}`)
	cfg, err := Load(dir, envOf(map[string]string{"GH_AUTH": "Bearer ghp_secret"}))
	if err != nil {
		t.Fatal(err)
	}
	files, gh := cfg.MCP.Servers["files"], cfg.MCP.Servers["github"]
	if files.Command != "npx" || files.Transport() != "stdio" || files.Env["ROOT"] != "/srv" || files.Cwd != "tools" {
		t.Errorf("files = %+v", files)
	}
	if files.CallTimeout() != DefaultMCPCallTimeout {
		t.Errorf("default call timeout = %v", files.CallTimeout())
	}
	if gh.Transport() != "http" || gh.Headers["Authorization"] != "Bearer ghp_secret" || gh.CallTimeout() != 20*time.Second {
		t.Errorf("github = %+v", gh)
	}
}

func TestBadMCPServerIsAClearErrorWithoutSecrets(t *testing.T) {
	cases := map[string]struct{ servers, want string }{
		"neither":         {`"x": {}`, `"x" needs "command"`},
		"both":            {`"x": {"command": "a", "url": "http://h/mcp"}`, "has both"},
		"bad name":        {`"a.b": {"command": "a"}`, "1 to 32 letters"},
		"long name":       {`"` + strings.Repeat("n", 33) + `": {"command": "a"}`, "1 to 32 letters"},
		"ftp url":         {`"x": {"url": "ftp://h/sk-secret"}`, "http:// or https://"},
		"no host":         {`"x": {"url": "https:///sk-secret"}`, "http:// or https://"},
		"empty header":    {`"x": {"url": "https://h/mcp", "headers": {"Authorization": "${UNSET}"}}`, "headers.Authorization is empty"},
		"header on stdio": {`"x": {"command": "a", "headers": {"A": "sk-secret"}}`, "\"headers\" are for HTTP"},
		"env on http":     {`"x": {"url": "https://h/mcp", "env": {"K": "sk-secret"}}`, "for stdio servers"},
		"bad timeout":     {`"x": {"command": "a", "timeoutSeconds": 100000}`, "timeoutSeconds"},
		"unknown field":   {`"x": {"command": "a", "comand": "b"}`, "comand"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, FileName, `{"mcp": {"servers": {`+c.servers+`}}}`)
			_, err := Load(dir, envOf(nil))
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one naming %q", err, c.want)
			}
			if strings.Contains(err.Error(), "sk-secret") {
				t.Errorf("error leaks a secret: %v", err)
			}
		})
	}
}
