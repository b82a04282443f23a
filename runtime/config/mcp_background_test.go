package config

import (
	"errors"
	"strings"
	"testing"
)

func TestMCPBackgroundNamesTheCallsThatRunAsJobs(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, FileName, `{"mcp": {"servers": {
	  "ci": {"command": "ci-mcp", "background": ["build_*", "deploy"]},
	  "docs": {"url": "https://mcp.example.com/mcp"}
	}}}`)
	cfg, err := Load(dir, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		server, tool string
		want         bool
	}{
		{"ci", "build_all", true}, {"ci", "build_", true}, {"ci", "deploy", true},
		{"ci", "deploy_now", false}, {"ci", "build", false}, {"ci", "status", false},
		{"docs", "build_all", false}, {"nope", "deploy", false},
	}
	for _, c := range cases {
		if got := cfg.MCP.RunsInBackground(c.server, c.tool); got != c.want {
			t.Errorf("RunsInBackground(%s, %s) = %v, want %v", c.server, c.tool, got, c.want)
		}
	}
	if !cfg.MCP.HasBackground() {
		t.Error("HasBackground = false with a background list")
	}
	if (MCPConfig{Servers: map[string]MCPServer{"docs": cfg.MCP.Servers["docs"]}}).HasBackground() {
		t.Error("HasBackground = true without any list")
	}
}

func TestBadMCPBackgroundIsAClearError(t *testing.T) {
	cases := map[string]struct{ list, want string }{
		"empty entry": {`["build_*", " "]`, "an entry is empty"},
		"inner star":  {`["bu*ld"]`, `"*" may only end an entry`},
		"two stars":   {`["**"]`, `"*" may only end an entry`},
		"not a list":  {`"build_*"`, "background"},
		"long entry":  {`["` + strings.Repeat("b", 300) + `"]`, "longer than 256"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, FileName, `{"mcp": {"servers": {"ci": {"command": "a", "background": `+c.list+`}}}}`)
			_, err := Load(dir, envOf(nil))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one naming %q", err, c.want)
			}
			if c.want != "background" && !errors.Is(err, ErrInvalid) {
				t.Errorf("err = %v, want ErrInvalid", err)
			}
		})
	}
}
