package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/internal/fakemcp"
	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/runtime/mcp"
	"github.com/shipmyagent/ship/server"
)

func TestStatusShowsEachMCPServer(t *testing.T) {
	fake := fakemcp.StartHTTP(fakemcp.HTTPOptions{})
	t.Cleanup(fake.Close)
	m := mcp.New(mcp.Options{Servers: map[string]config.MCPServer{
		"web":     {URL: fake.URL},
		"missing": {Command: "ship-test-no-such-mcp-server"},
	}, Logger: zerolog.Nop()})
	m.Start(context.Background())
	t.Cleanup(m.Close)
	deadline := time.After(hangGuard)
	for {
		changed := m.Changed()
		st := m.Status()
		if st[0].State == mcp.StateFailed && st[1].State == mcp.StateReady {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("servers never settled: %+v", st)
		}
	}

	e := newEnv(t, setup{opts: func(o *server.Options) { o.MCP = m.Status }})
	list, ok := e.get("/api/status").json(t)["mcp"].([]any)
	if !ok || len(list) != 2 {
		t.Fatalf("mcp = %v", list)
	}
	missing, web := list[0].(map[string]any), list[1].(map[string]any)
	if web["name"] != "web" || web["transport"] != "http" || web["state"] != "ready" || web["tools"] != float64(12) {
		t.Errorf("web = %v", web)
	}
	if s, _ := web["since"].(string); len(s) < 20 {
		t.Errorf("since = %v", web["since"])
	}
	if missing["name"] != "missing" || missing["transport"] != "stdio" || missing["state"] != "failed" ||
		!contains(missing["lastError"].(string), "ship-test-no-such-mcp-server") {
		t.Errorf("missing = %v", missing)
	}

	bare := newEnv(t, setup{})
	if r := bare.get("/api/status"); !contains(string(r.body), `"mcp":[]`) {
		t.Errorf("mcp without servers is not []: %s", r.body)
	}
}
