package config

import (
	"slices"
	"strings"
	"testing"
)

// TestDiffNamesChangedSettingsNeverValues: an operator edits ship.json;
// the reload names what changed (the model, a key, a server, an allowlist)
// and which of those need a restart, without printing a value.
func TestDiffNamesChangedSettingsNeverValues(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, FileName, `{
	  "llm": {"provider": "openai", "model": "a", "apiKey": "sk-old-secret-1"},
	  "mcp": {"servers": {"keep": {"command": "x"}, "gone": {"command": "y"}}},
	  "adapters": {"telegram": {"allowedChatIds": [1]}},
	  "tools": {"exec": {"enabled": true, "timeoutSeconds": 10}}
	}`)
	old, err := Load(dir, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, FileName, `{
	  "llm": {"provider": "openai", "model": "b", "apiKey": "sk-new-secret-2"},
	  "mcp": {"servers": {"keep": {"command": "x"}, "new": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer zzz-secret"}}}},
	  "adapters": {"telegram": {"allowedChatIds": [1, 2]}},
	  "server": {"port": 4000},
	  "tools": {"exec": {"enabled": false, "timeoutSeconds": 20}}
	}`)
	cur, err := Load(dir, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	changed, err := Diff(old, cur)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"adapters.telegram.allowedChatIds", "llm.apiKey", "llm.model", "mcp.servers.gone", "mcp.servers.new",
		"server.port", "tools.exec.enabled", "tools.exec.timeoutSeconds"}
	if !slices.Equal(changed, want) {
		t.Errorf("Diff = %v, want %v", changed, want)
	}
	if joined := strings.Join(changed, " "); strings.Contains(joined, "secret") || strings.Contains(joined, "example.com") {
		t.Errorf("Diff shows values: %v", changed)
	}
	restart := NeedsRestart(changed)
	wantRestart := []string{"server.port", "tools.exec.enabled"}
	if !slices.Equal(restart, wantRestart) {
		t.Errorf("NeedsRestart = %v, want %v", restart, wantRestart)
	}
	if !Changed(changed, "mcp") || !Changed(changed, "llm") || Changed(changed, "skills") || Changed(changed, "ll") {
		t.Errorf("Changed misreads %v", changed)
	}

	if jobs := NeedsRestart([]string{"tools.jobs.perChat", "tools.jobs.off", "tools.agents.max"}); !slices.Equal(jobs, []string{"tools.jobs.off", "tools.agents.max"}) {
		t.Errorf("jobs settings needing a restart: %v", jobs)
	}
	platform := NeedsRestart([]string{"adapters.telegram.botToken", "adapters.telegram.allowedUserIds", "adapters.telegram.parseMode",
		"adapters.qq.markdown", "adapters.feishu.mode"})
	if !slices.Equal(platform, []string{"adapters.telegram.botToken", "adapters.telegram.parseMode", "adapters.feishu.mode"}) {
		t.Errorf("platform settings needing a restart: %v", platform)
	}

	same, err := Diff(cur, cur)
	if err != nil || len(same) != 0 {
		t.Errorf("Diff of a config with itself = %v, %v", same, err)
	}
}
