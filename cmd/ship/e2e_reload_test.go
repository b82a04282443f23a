package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/shipmyagent/ship/internal/fakemcp"
	"github.com/shipmyagent/ship/internal/fakeopenai"
)

// reloadEnv points ship at fake without LLM_MODEL: the environment wins
// over ship.json, and these tests change the model in ship.json.
func reloadEnv(fake *fakeopenai.Server) []string {
	return append(baseEnv(), "LLM_PROVIDER=openai", "LLM_API_KEY=test-key", "LLM_BASE_URL="+fake.BaseURL(), "SHIP_LOG_LEVEL=debug")
}

// setModel writes model as ship.json's llm.model.
func setModel(t *testing.T, dir, model string) {
	t.Helper()
	addToShipJSON(t, dir, map[string]any{"llm": map[string]any{"provider": "openai", "model": model}})
}

// reloadStatus is what /api/status says of the configuration.
type reloadStatus struct {
	Model  string `json:"model"`
	Config struct {
		LoadedAt  string `json:"loadedAt"`
		LastError string `json:"lastError"`
	} `json:"config"`
}

func statusOf(t *testing.T, p *shipProc) reloadStatus {
	t.Helper()
	var st reloadStatus
	if err := json.Unmarshal(p.do(t, "GET", "/api/status", "").body, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func hangUp(t *testing.T, p *shipProc) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
}

// TestE2EReloadSwapsTheModelWhileATurnRuns: the operator changes
// llm.model and sends SIGHUP while a turn waits on the model. That turn
// finishes on the model it started with; the next turn reaches the fake
// under the new name; /api/status, the log and /api/sse say what changed.
func TestE2EReloadSwapsTheModelWhileATurnRuns(t *testing.T) {
	t.Parallel()
	fake := startFake(t, nil)
	entered, release := blockTurn(t, fake, "slow one")
	dir := initProject(t)
	setModel(t, dir, "model-a")
	p := startShip(t, dir, reloadEnv(fake))
	events := sseLines(t, p)

	slow := p.echoAsync("c1", "slow one")
	await(t, entered, "the slow turn at the model")
	setModel(t, dir, "model-b")
	hangUp(t, p)
	eventually(t, "/api/status naming model-b", func() bool { return statusOf(t, p).Model == "openai/model-b" })
	release()
	if err := await(t, slow, "the slow turn's answer"); err != nil {
		t.Fatalf("the turn running at the reload: %v", err)
	}
	p.mustExecute(t, "c2", "fast one")

	for _, r := range fake.Requests() {
		want := map[string]string{"slow one": "model-a", "fast one": "model-b"}[r.LastUser()]
		if want != "" && r.Model != want {
			t.Errorf("a model call for %q named %q, want %q", r.LastUser(), r.Model, want)
		}
	}
	if got := modelOf(t, fake, "fast one"); got != "model-b" {
		t.Errorf("the turn after the reload reached %q", got)
	}
	eventually(t, "a config_reloaded event naming llm.model", func() bool {
		return containsLine(events(), `"type":"config_reloaded"`, `"llm.model"`)
	})
	if log := p.stderr.String(); !containsLine(strings.Split(log, "\n"), "configuration reloaded", "SIGHUP", "llm.model") {
		t.Errorf("the log does not tell the reload:\n%s", lastLines(log, 20))
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
}

// TestE2EReloadRefusesABadFile: a ship.json that is not JSON, then one
// naming a model llm.models lacks, are refused: the last good
// configuration keeps answering, and the log, an error event and
// /api/status say why; a fixed file is taken on its own (no signal) and
// clears the error; a changed queue capacity is logged as needing a
// restart.
func TestE2EReloadRefusesABadFile(t *testing.T) {
	t.Parallel()
	fake := startFake(t, nil)
	dir := initProject(t)
	setModel(t, dir, "model-a")
	p := startShip(t, dir, reloadEnv(fake))
	events := sseLines(t, p)
	path := filepath.Join(dir, "ship.json")
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(path, []byte(`{"llm": {"model": "model-b",}`), 0o600); err != nil {
		t.Fatal(err)
	}
	hangUp(t, p)
	eventually(t, "/api/status config.lastError", func() bool { return statusOf(t, p).Config.LastError != "" })
	if st := statusOf(t, p); !strings.Contains(st.Config.LastError, "not valid JSON") || st.Model != "openai/model-a" {
		t.Errorf("after bad JSON: %+v", st)
	}
	p.mustExecute(t, "c1", "still answering")
	if got := modelOf(t, fake, "still answering"); got != "model-a" {
		t.Errorf("after a refused reload the turn reached %q", got)
	}
	eventually(t, "an error event CONFIG_INVALID", func() bool {
		return containsLine(events(), `"type":"error"`, `"errorCode":"CONFIG_INVALID"`, "not valid JSON")
	})
	if page := p.do(t, "GET", "/", ""); !strings.Contains(string(page.body), "ship.json was not reloaded") {
		t.Errorf("the console's overview does not show the refused reload:\n%s", page.body)
	}
	if !strings.Contains(p.stderr.String(), "ship.json not reloaded") {
		t.Errorf("the log does not say the reload was refused:\n%s", lastLines(p.stderr.String(), 20))
	}

	if err := os.WriteFile(path, good, 0o600); err != nil {
		t.Fatal(err)
	}
	addToShipJSON(t, dir, map[string]any{"history": map[string]any{"summaryModel": "no-such-model"}})
	hangUp(t, p)
	eventually(t, "the unknown model refused", func() bool {
		return strings.Contains(statusOf(t, p).Config.LastError, "history.summaryModel")
	})

	// Fixed, with a new model and a new queue capacity: taken when the
	// file changes, without a signal; the capacity waits for a restart.
	if err := os.WriteFile(path, good, 0o600); err != nil {
		t.Fatal(err)
	}
	setModel(t, dir, "model-c")
	addToShipJSON(t, dir, map[string]any{"queue": map[string]any{"capacity": 500}})
	eventually(t, "the fixed file in force", func() bool {
		st := statusOf(t, p)
		return st.Config.LastError == "" && st.Model == "openai/model-c"
	})
	p.mustExecute(t, "c1", "after the fix")
	if got := modelOf(t, fake, "after the fix"); got != "model-c" {
		t.Errorf("after the fix the turn reached %q", got)
	}
	if log := p.stderr.String(); !strings.Contains(log, "needs a restart") || !strings.Contains(log, "queue.capacity") {
		t.Errorf("the changed port is not logged as needing a restart:\n%s", lastLines(log, 20))
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
}

// TestE2EReloadAddsAnMCPServer: an MCP server added to ship.json while
// ship runs (no server before) starts, and the next turn is offered its
// tools and can call them.
func TestE2EReloadAddsAnMCPServer(t *testing.T) {
	t.Parallel()
	bin, err := fakemcp.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fake := startFake(t, mcpCalls)
	dir := initProject(t)
	p := startShip(t, dir, modelEnv(fake))
	addToShipJSON(t, dir, map[string]any{
		"mcp":   map[string]any{"servers": map[string]any{"added": map[string]any{"command": bin}}},
		"tools": map[string]any{"allow": []string{"mcp.added.*"}},
	})
	hangUp(t, p)
	var status struct {
		MCP []struct{ Name, State string } `json:"mcp"`
	}
	eventually(t, "the added MCP server ready in /api/status", func() bool {
		return json.Unmarshal(p.do(t, "GET", "/api/status", "").body, &status) == nil &&
			len(status.MCP) == 1 && status.MCP[0].Name == "added" && status.MCP[0].State == "ready"
	})
	res := p.mustExecute(t, "", `call mcp__added__echo {"text":"from a reloaded server"}`)
	if len(res.Replies) != 1 || res.Replies[0] != "result: from a reloaded server" {
		t.Errorf("calling the added server's tool: %+v", res)
	}
	if last := fake.Requests()[0]; !last.HasTool("mcp__added__echo") {
		t.Error("the added server's tools were not offered")
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
}

// containsLine reports whether one of lines contains every one of want.
func containsLine(lines []string, want ...string) bool {
	for _, l := range lines {
		ok := true
		for _, w := range want {
			if !strings.Contains(l, w) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}
