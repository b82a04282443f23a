package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/shipmyagent/ship/internal/fakemcp"
	"github.com/shipmyagent/ship/internal/fakeopenai"
)

// mcpCalls scripts the model: "call <function> <json>" calls it; once
// the result is in, the answer repeats it.
func mcpCalls(r fakeopenai.Request) fakeopenai.Response {
	if res := r.ToolResults(); len(res) > 0 {
		return fakeopenai.Response{Content: "result: " + res[len(res)-1].Content}
	}
	name, args, _ := strings.Cut(strings.TrimPrefix(r.LastUser(), "call "), " ")
	return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: name, Arguments: args}}}
}

// addToShipJSON merges sections into the project's ship.json.
func addToShipJSON(t *testing.T, dir string, sections map[string]any) {
	t.Helper()
	path := filepath.Join(dir, "ship.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	for k, v := range sections {
		cfg[k] = v
	}
	out, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestE2EMCPServers(t *testing.T) {
	t.Parallel()
	bin, err := fakemcp.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	web := fakemcp.StartHTTP(fakemcp.HTTPOptions{RequireHeader: "Authorization", RequireValue: "Bearer e2e-header-secret"})
	t.Cleanup(web.Close)
	fake := startFake(t, mcpCalls)
	dir := initProject(t)
	addToShipJSON(t, dir, map[string]any{
		"mcp": map[string]any{"servers": map[string]any{
			"local": map[string]any{"command": bin},
			"web":   map[string]any{"url": web.URL, "headers": map[string]string{"Authorization": "${MCP_WEB_AUTH}"}},
		}},
		"tools": map[string]any{"allow": []string{"mcp.local.*", "mcp.web.echo"}},
	})
	p := startShip(t, dir, modelEnv(fake, "MCP_WEB_AUTH=Bearer e2e-header-secret"))
	if m := regexp.MustCompile(`ready in [0-9.]+[µm]?s`).FindString(p.stdout.String()); m != "" {
		t.Logf("with two MCP servers configured, ship was %s", m)
	}

	var status struct {
		MCP []struct {
			Name, Transport, State string
			Tools                  int
		} `json:"mcp"`
	}
	eventually(t, "both MCP servers ready in /api/status", func() bool {
		r := p.do(t, "GET", "/api/status", "")
		return json.Unmarshal(r.body, &status) == nil && len(status.MCP) == 2 &&
			status.MCP[0].State == "ready" && status.MCP[1].State == "ready"
	})
	if s := status.MCP; s[0].Name != "local" || s[0].Transport != "stdio" || s[1].Name != "web" || s[1].Transport != "http" || s[1].Tools < 8 {
		t.Errorf("mcp status %+v", s)
	}

	// The stdio child runs without ship's secrets.
	res := p.mustExecute(t, "", `call mcp__local__getenv {"name":"LLM_API_KEY"}`)
	if !res.Success || len(res.ToolCalls) != 1 || res.ToolCalls[0].Tool != "mcp.local.getenv" || !slices.Equal(res.Replies, []string{"result: (unset)"}) {
		t.Errorf("getenv: %+v", res)
	}
	res = p.mustExecute(t, "", `call mcp__web__echo {"text":"over http"}`)
	if !slices.Equal(res.Replies, []string{"result: over http"}) {
		t.Errorf("web echo: %+v", res)
	}
	// Only echo of web is allowed: add is not offered.
	last := fake.Requests()[len(fake.Requests())-1]
	if !last.HasTool("mcp__local__add") || last.HasTool("mcp__web__add") {
		t.Errorf("offered tools: local add %v (want true), web add %v (want false)", last.HasTool("mcp__local__add"), last.HasTool("mcp__web__add"))
	}

	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d after SIGTERM", code)
	}
	if strings.Contains(p.stderr.String(), "e2e-header-secret") {
		t.Error("the header secret is in ship's log")
	}
	if web.Hits() == 0 {
		t.Error("the HTTP server was never reached")
	}
}
