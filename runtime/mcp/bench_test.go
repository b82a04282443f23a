package mcp_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/internal/fakemcp"
	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/runtime/mcp"
)

// BenchmarkCallTool measures one echo call through the Manager: the
// overhead ship adds to every MCP tool call, over each transport.
func BenchmarkCallTool(b *testing.B) {
	web := fakemcp.StartHTTP(fakemcp.HTTPOptions{})
	defer web.Close()
	for name, srv := range map[string]config.MCPServer{"stdio": {Command: fakeBin}, "http": {URL: web.URL}} {
		b.Run(name, func(b *testing.B) {
			m := mcp.New(mcp.Options{Servers: map[string]config.MCPServer{"s": srv}, Logger: zerolog.Nop()})
			m.Start(context.Background())
			defer m.Close()
			deadline := time.After(hangGuard)
			for {
				changed := m.Changed()
				if m.Status()[0].State == mcp.StateReady {
					break
				}
				select {
				case <-changed:
				case <-deadline:
					b.Fatalf("not ready: %+v", m.Status())
				}
			}
			args := json.RawMessage(`{"text":"hello"}`)
			for b.Loop() {
				if _, err := m.CallTool(context.Background(), "s", "echo", args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
