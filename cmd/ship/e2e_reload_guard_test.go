package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestE2EReloadCannotWidenTheAPI is an operator's edit (or an intruder's
// write to .env and ship.json) that would open the API: SHIP_API_TOKEN
// removed from .env, a web origin added to server.corsOrigins, the
// listener moved to every address. That file is refused as a whole (no
// token beyond loopback); without the move it loads, yet the running API
// takes none of it: the token is still asked for, the origin still
// refused; the log and /api/status say a restart is needed,
// naming the settings and never their values.
func TestE2EReloadCannotWidenTheAPI(t *testing.T) {
	t.Parallel()
	fake := startFake(t, nil)
	dir := initProject(t)
	setModel(t, dir, "model-a")
	const token = "reload-guard-token-0123456789abcdef0123456789abcdef"
	envPath := filepath.Join(dir, ".env")
	if err := os.WriteFile(envPath, []byte("SHIP_API_TOKEN="+token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startShip(t, dir, reloadEnv(fake))
	auth := "Authorization: Bearer " + token
	if r := p.do(t, "GET", "/api/chats", ""); r.status != 401 {
		t.Fatalf("without the token before the reload: %d %s", r.status, r.body)
	}

	// All at once: moving to every address without a token does not load,
	// and the last good configuration stays in force.
	if err := os.WriteFile(envPath, []byte("# no token now\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addToShipJSON(t, dir, map[string]any{"server": map[string]any{"host": "0.0.0.0", "corsOrigins": []string{"https://evil.example"}}})
	hangUp(t, p)
	eventually(t, "the reload refused", func() bool {
		return strings.Contains(p.do(t, "GET", "/api/status", "", auth).bodyText(), "without an API token")
	})
	if r := p.do(t, "GET", "/api/chats", ""); r.status != 401 {
		t.Errorf("without the token after a refused reload: %d %s, want 401", r.status, r.body)
	}

	// On loopback it loads, and the API keeps the token and origins it
	// started with until a restart.
	addToShipJSON(t, dir, map[string]any{"server": map[string]any{"host": "127.0.0.1", "corsOrigins": []string{"https://evil.example"}}})
	hangUp(t, p)
	var st struct {
		Config struct {
			NeedsRestart []string `json:"needsRestart"`
		} `json:"config"`
	}
	eventually(t, "/api/status naming the settings that need a restart", func() bool {
		r := p.do(t, "GET", "/api/status", "", auth)
		return json.Unmarshal(r.body, &st) == nil && len(st.Config.NeedsRestart) > 0
	})
	for _, want := range []string{"server.token", "server.corsOrigins"} {
		if !slices.Contains(st.Config.NeedsRestart, want) {
			t.Errorf("needsRestart = %v, want %s in it", st.Config.NeedsRestart, want)
		}
	}

	if r := p.do(t, "GET", "/api/chats", ""); r.status != 401 {
		t.Errorf("without the token after it left .env: %d %s, want 401", r.status, r.body)
	}
	if r := p.do(t, "POST", "/api/execute", executeBody("c1", "opened?"), "Origin: https://evil.example", auth); r.status != 403 {
		t.Errorf("from the origin added at the reload: %d %s, want 403", r.status, r.body)
	}
	if r := p.do(t, "GET", "/api/chats", "", auth); r.status != 200 {
		t.Errorf("with the token: %d %s", r.status, r.body)
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
	log := p.stderr.String()
	if !containsLine(strings.Split(log, "\n"), "needs a restart", "server.corsOrigins") {
		t.Errorf("the log does not say server.corsOrigins needs a restart:\n%s", lastLines(log, 20))
	}
	for _, value := range []string{token, token[:16], "evil.example"} {
		if strings.Contains(log, value) {
			t.Errorf("the log shows %q, a value of a reloaded setting", value)
		}
	}
	if n := fake.RequestCount(); n != 0 {
		t.Errorf("refused requests reached the model %d times", n)
	}
}

func (r response) bodyText() string { return string(r.body) }
