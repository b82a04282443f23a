package mcp_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/internal/fakemcp"
	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/runtime/mcp"
)

func TestHTTPServerListsAndCallsWithItsHeaders(t *testing.T) {
	const auth = "Bearer sk-mcp-header-secret"
	fake := httpFake(t, fakemcp.HTTPOptions{RequireHeader: "Authorization", RequireValue: auth})
	r := start(t, map[string]config.MCPServer{
		"web":    {URL: fake.URL, Headers: map[string]string{"Authorization": auth}},
		"nokey":  {URL: fake.URL},
		"badkey": {URL: fake.URL, Headers: map[string]string{"Authorization": "Bearer sk-wrong-secret"}},
	})
	st := r.waitState("web", mcp.StateReady)
	for _, name := range []string{"nokey", "badkey"} {
		if st := r.waitState(name, mcp.StateFailed); !strings.Contains(st.LastError, "Unauthorized") || strings.Contains(st.LastError, "sk-wrong-secret") {
			t.Errorf("%s: lastError %q, want the 401 without the header value", name, st.LastError)
		}
	}
	if st.Transport != "http" || st.Tools < 8 {
		t.Errorf("status = %+v", st)
	}

	var echo mcp.Tool
	for _, tl := range r.m.Tools() {
		if tl.Name == "echo" {
			echo = tl
		}
	}
	var schema struct {
		Type       string
		Properties map[string]struct{ Type, Description string }
	}
	if err := json.Unmarshal(echo.InputSchema, &schema); err != nil {
		t.Fatalf("echo schema %s: %v", echo.InputSchema, err)
	}
	if echo.Server != "web" || echo.Description != "Echo the text back." || schema.Type != "object" ||
		schema.Properties["text"].Description != "the text to echo back" {
		t.Errorf("echo = %+v, schema %s", echo, echo.InputSchema)
	}

	if got := r.mustCall("web", "echo", `{"text":"hi there"}`); got != "hi there" {
		t.Errorf("echo = %q", got)
	}
	if got := r.mustCall("web", "add", `{"a":2,"b":3}`); got != "5" {
		t.Errorf("add = %q", got)
	}
	res, err := r.call("web", "fail", `{"message":"no such repo"}`)
	if err != nil || !res.IsError || res.Text != "no such repo" {
		t.Errorf("fail = %+v, %v; want an error result with the server's text", res, err)
	}
	_, err = r.call("web", "nope", `{}`)
	if err == nil {
		t.Fatal("calling an unknown tool worked")
	}
	mustContain(t, "unknown tool error", err.Error(), "mcp server web refused the call to nope")
	if logs := r.logs.String(); strings.Contains(logs, "sk-mcp-header-secret") || strings.Contains(logs, "sk-wrong-secret") {
		t.Error("a header value is in the log")
	}
}

func TestImagesAndResourcesAreDescribedNotDumped(t *testing.T) {
	fake := httpFake(t, fakemcp.HTTPOptions{})
	r := start(t, map[string]config.MCPServer{"web": {URL: fake.URL}})
	r.waitState("web", mcp.StateReady)

	img := r.mustCall("web", "image", `{}`)
	mustContain(t, "image result", img, "a pixel:", "[image: image/png, 67 bytes; not shown]")
	if strings.Contains(img, "iVBOR") {
		t.Errorf("image result carries the base64 data: %q", img)
	}
	res := r.mustCall("web", "resources", `{}`)
	mustContain(t, "resources result", res,
		"[resource link: file:///srv/report.pdf (report, application/pdf, 1234 bytes)]",
		"[resource: file:///srv/notes.txt (text/plain, 12 characters of text); not shown]")
	if strings.Contains(res, "secret notes") {
		t.Errorf("the embedded resource was dumped: %q", res)
	}
}

func TestStdioServerCrashingMidCallIsRestarted(t *testing.T) {
	r := start(t, map[string]config.MCPServer{"fake": stdio()})
	r.waitState("fake", mcp.StateReady)
	if got := r.mustCall("fake", "echo", `{"text":"before"}`); got != "before" {
		t.Fatalf("echo = %q", got)
	}

	_, err := r.call("fake", "crash", `{}`)
	if err == nil {
		t.Fatal("a call whose server died answered")
	}
	mustContain(t, "crash error", err.Error(), "mcp server fake is down:", "try later")

	r.waitFor("a restart", func() bool { st := r.status("fake"); return st.State == mcp.StateReady && st.Restarts >= 1 })
	st := r.status("fake")
	mustContain(t, "lastError", st.LastError, "connection lost", "crashing as asked")
	if got := r.mustCall("fake", "echo", `{"text":"after"}`); got != "after" {
		t.Errorf("echo after the restart = %q", got)
	}
}

func TestSlowCallHitsTheServerTimeout(t *testing.T) {
	r := start(t, map[string]config.MCPServer{"fake": {Command: fakeBin, TimeoutSeconds: 1}})
	r.waitState("fake", mcp.StateReady)
	_, err := r.call("fake", "slow", `{"ms":600000}`)
	if err == nil {
		t.Fatal("a ten-minute call answered")
	}
	mustContain(t, "timeout error", err.Error(), "mcp server fake did not answer slow within 1s")
	// The server itself is fine: the next call works on the same session.
	if got := r.mustCall("fake", "echo", `{"text":"still here"}`); got != "still here" {
		t.Errorf("echo after a timeout = %q", got)
	}
	if st := r.status("fake"); st.State != mcp.StateReady || st.Restarts != 0 {
		t.Errorf("status after a timeout = %+v", st)
	}
}

func TestListChangedAddsTools(t *testing.T) {
	fake := httpFake(t, fakemcp.HTTPOptions{})
	r := start(t, map[string]config.MCPServer{"web": {URL: fake.URL}, "fake": stdio()})
	r.waitState("web", mcp.StateReady)
	r.waitState("fake", mcp.StateReady)

	// Over HTTP: the server adds a tool by itself.
	fake.AddEcho("late")
	r.waitFor("web's new tool", func() bool { return r.hasTool("web", "late") })
	if got := r.mustCall("web", "late", `{"text":"new"}`); got != "new" {
		t.Errorf("late = %q", got)
	}
	// Over stdio: a call makes the server add one.
	r.mustCall("fake", "add_tool", `{"name":"ns.dotted"}`)
	r.waitFor("fake's new tool", func() bool { return r.hasTool("fake", "ns.dotted") })
	if r.hasTool("web", "ns.dotted") {
		t.Error("a tool of one server appeared on the other")
	}
}

func TestStdioChildEnvironmentAndFolder(t *testing.T) {
	t.Setenv("LLM_API_KEY", "sk-parent-secret")
	t.Setenv("SHIP_MCP_TEST_VISIBLE", "yes")
	r := start(t, map[string]config.MCPServer{"fake": {Command: fakeBin, Cwd: "sub",
		Env: map[string]string{"SERVER_TOKEN": "tok-own-value", "SHIP_MCP_TEST_VISIBLE": "overridden"}}},
		func(o *mcp.Options) {
			if err := os.Mkdir(filepath.Join(o.Dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
		})
	r.waitState("fake", mcp.StateReady)
	for name, want := range map[string]string{
		"LLM_API_KEY": "(unset)", "SERVER_TOKEN": "tok-own-value", "SHIP_MCP_TEST_VISIBLE": "overridden", "PATH": os.Getenv("PATH"),
	} {
		if got := r.mustCall("fake", "getenv", `{"name":"`+name+`"}`); got != want {
			t.Errorf("the server sees %s=%q, want %q", name, got, want)
		}
	}
	wd := r.mustCall("fake", "cwd", `{}`)
	want, _ := filepath.EvalSymlinks(filepath.Join(r.dir, "sub"))
	if got, _ := filepath.EvalSymlinks(wd); got != want {
		t.Errorf("cwd = %q, want %q", wd, want)
	}
}

func TestServerThatCannotStartIsFailedWithoutSecrets(t *testing.T) {
	srv := stdio("-fail", "login with tok-secret-value refused")
	srv.Env = map[string]string{"SERVER_TOKEN": "tok-secret-value"}
	r := start(t, map[string]config.MCPServer{"fake": srv})
	st := r.waitState("fake", mcp.StateFailed)
	mustContain(t, "lastError", st.LastError, "login with <redacted> refused")
	_, err := r.call("fake", "echo", `{"text":"x"}`)
	if err == nil {
		t.Fatal("a server that never started answered")
	}
	mustContain(t, "call error", err.Error(), "mcp server fake is down:", "refused", "try later")
	for what, s := range map[string]string{"status": st.LastError, "error": err.Error(), "log": r.logs.String()} {
		if strings.Contains(s, "tok-secret-value") {
			t.Errorf("the %s shows the env value: %q", what, s)
		}
	}
	r.waitFor("a retry", func() bool { return r.status("fake").Restarts >= 2 })
}

func TestStartNeverWaitsForAServer(t *testing.T) {
	// It never answers the handshake.
	r := start(t, map[string]config.MCPServer{"mute": {Command: "sh", Args: []string{"-c", "exec cat >/dev/null"}}})
	if st := r.status("mute"); st.State != mcp.StateConnecting {
		t.Errorf("status right after Start = %+v", st)
	}
	_, err := r.call("mute", "echo", `{}`)
	if err == nil {
		t.Fatal("a mute server answered")
	}
	mustContain(t, "call error", err.Error(), "mcp server mute is down: connecting; try later")
	if tools := r.m.Tools(); len(tools) != 0 {
		t.Errorf("tools of a server that is not ready: %+v", tools)
	}
}

func TestHTTPServerDownAndBack(t *testing.T) {
	fake := httpFake(t, fakemcp.HTTPOptions{})
	r := start(t, map[string]config.MCPServer{"web": {URL: fake.URL + "?key=sk-in-the-url"}})
	r.waitState("web", mcp.StateReady)

	fake.SetDown(true)
	_, err := r.call("web", "echo", `{"text":"x"}`)
	if err == nil {
		t.Fatal("a server that is down answered")
	}
	mustContain(t, "down error", err.Error(), "mcp server web is down:", "try later")
	r.waitFor("web to fail", func() bool { return r.status("web").State == mcp.StateFailed })
	// Its tools stay offered while it is away: a call says it is down.
	if !r.hasTool("web", "echo") {
		t.Error("the tools of a server that was ready vanished while it reconnects")
	}
	if st := r.status("web"); strings.Contains(st.LastError+err.Error()+r.logs.String(), "sk-in-the-url") {
		t.Errorf("the url's key shows: %q / %q", st.LastError, err.Error())
	}

	fake.SetDown(false)
	r.waitState("web", mcp.StateReady)
	if got := r.mustCall("web", "echo", `{"text":"back"}`); got != "back" {
		t.Errorf("echo = %q", got)
	}
}

func TestCloseStopsEveryServer(t *testing.T) {
	fake := httpFake(t, fakemcp.HTTPOptions{})
	r := start(t, map[string]config.MCPServer{"web": {URL: fake.URL}, "fake": stdio(), "broken": stdio("-fail", "no")})
	r.waitState("web", mcp.StateReady)
	r.waitState("fake", mcp.StateReady)
	r.close()
	for _, st := range r.m.Status() {
		if st.State != mcp.StateStopped || st.Tools != 0 {
			t.Errorf("after Close: %+v", st)
		}
	}
	if tools := r.m.Tools(); len(tools) != 0 {
		t.Errorf("tools after Close: %d", len(tools))
	}
	_, err := r.call("fake", "echo", `{}`)
	if err == nil || !strings.Contains(err.Error(), "mcp server fake is down: stopped") {
		t.Errorf("a call after Close: %v", err)
	}
}
