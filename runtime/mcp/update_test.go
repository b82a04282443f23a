package mcp_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/shipmyagent/ship/internal/fakemcp"
	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/runtime/mcp"
)

// TestUpdateAddsAServerAndItsTools: a server added to ship.json while ship
// runs starts, and its tools are offered, without a restart of the others.
func TestUpdateAddsAServerAndItsTools(t *testing.T) {
	r := start(t, map[string]config.MCPServer{"one": stdio()})
	r.waitState("one", mcp.StateReady)
	added, removed, restarted := r.m.Update(map[string]config.MCPServer{"one": stdio(), "two": stdio()})
	if !slices.Equal(added, []string{"two"}) || len(removed) != 0 || len(restarted) != 0 {
		t.Fatalf("Update = added %v, removed %v, restarted %v", added, removed, restarted)
	}
	r.waitState("two", mcp.StateReady)
	r.waitFor("two's tools", func() bool { return r.hasTool("two", "echo") })
	if got := r.mustCall("two", "echo", `{"text":"hi two"}`); got != "hi two" {
		t.Errorf("echo on the added server = %q", got)
	}
	if st := r.status("one"); st.State != mcp.StateReady || st.Restarts != 0 {
		t.Errorf("the server that stayed was disturbed: %+v", st)
	}
}

// TestUpdateRemovesAServerAfterItsRunningCall: a server removed while one
// of its calls runs loses its tools at once, but the running call ends with
// its answer, not a broken connection; a new call is refused and says why.
func TestUpdateRemovesAServerAfterItsRunningCall(t *testing.T) {
	web := httpFake(t, fakemcp.HTTPOptions{})
	entered, release := make(chan struct{}), make(chan struct{})
	sdk.AddTool(web.Server.Server, &sdk.Tool{Name: "hold", Description: "Answer once released."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			close(entered)
			<-release
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "released"}}}, nil, nil
		})
	r := start(t, map[string]config.MCPServer{"keep": stdio(), "gone": {URL: web.URL}})
	r.waitState("gone", mcp.StateReady)
	r.waitState("keep", mcp.StateReady)
	r.waitFor("the hold tool", func() bool { return r.hasTool("gone", "hold") })

	type answer struct {
		res mcp.Result
		err error
	}
	running := make(chan answer, 1)
	go func() {
		res, err := r.call("gone", "hold", `{}`)
		running <- answer{res, err}
	}()
	<-entered
	_, removed, _ := r.m.Update(map[string]config.MCPServer{"keep": stdio()})
	if !slices.Equal(removed, []string{"gone"}) {
		t.Fatalf("removed = %v", removed)
	}
	if r.hasTool("gone", "echo") {
		t.Error("a removed server's tools are still offered")
	}
	for _, st := range r.m.Status() {
		if st.Name == "gone" {
			t.Errorf("a removed server is still in the status: %+v", st)
		}
	}
	if _, err := r.call("gone", "echo", `{"text":"x"}`); err == nil || !strings.Contains(err.Error(), `no mcp server "gone"`) {
		t.Errorf("a call to the removed server while its last call runs = %v", err)
	}
	close(release)
	got := <-running
	if got.err != nil || got.res.Text != "released" {
		t.Errorf("the call running at the removal = %+v, %v; want its answer", got.res, got.err)
	}
	if _, err := r.call("gone", "echo", `{"text":"x"}`); err == nil || !strings.Contains(err.Error(), `no mcp server "gone"`) {
		t.Errorf("a call to the removed server = %v", err)
	}
	if got := r.mustCall("keep", "echo", `{"text":"still"}`); got != "still" {
		t.Errorf("the kept server = %q", got)
	}
}

// TestUpdateRestartsAChangedServer: a server whose settings changed runs
// again with the new ones (here its call timeout).
func TestUpdateRestartsAChangedServer(t *testing.T) {
	r := start(t, map[string]config.MCPServer{"fake": stdio()})
	r.waitState("fake", mcp.StateReady)
	changed := config.MCPServer{Command: fakeBin, TimeoutSeconds: 1}
	_, _, restarted := r.m.Update(map[string]config.MCPServer{"fake": changed})
	if !slices.Equal(restarted, []string{"fake"}) {
		t.Fatalf("restarted = %v", restarted)
	}
	r.waitState("fake", mcp.StateReady)
	_, err := r.call("fake", "slow", `{"ms":600000}`)
	if err == nil || !strings.Contains(err.Error(), "within 1s") {
		t.Errorf("a slow call after the change = %v, want the new 1 s timeout", err)
	}
	if added, removed, restarted := r.m.Update(map[string]config.MCPServer{"fake": changed}); len(added)+len(removed)+len(restarted) != 0 {
		t.Errorf("an unchanged set changed something: %v %v %v", added, removed, restarted)
	}
}
