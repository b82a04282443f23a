package engine_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/events"
)

// chat_send_file is governed like any tool: a deny rule with a path glob
// keeps those files in, and the rest still go. What went is an artifact
// event and is listed in the run's result.
func TestAPathGlobNarrowsChatSendFile(t *testing.T) {
	h := newHarness(t, harnessOptions{show: true, policy: `{"deny": ["chat_send_file(private/*)"]}`,
		handler: func(r fakeopenai.Request) fakeopenai.Response {
			if len(r.ToolResults()) > 0 {
				return fakeopenai.Response{}
			}
			return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{call("chat_send_file", map[string]any{"paths": []string{r.LastUser()}})}}
		}})
	for _, f := range []string{"private/keys.txt", "reports/week.txt"} {
		p := filepath.Join(h.dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("content of "+f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sub, _ := h.engine.Subscribe(func(e events.Event) bool { return e.Type == events.TypeArtifact }, 0, 16)
	defer sub.Close()

	o := h.ask("7", "m1", "private/keys.txt")
	if len(o.Result.ToolCalls) != 1 || !strings.Contains(o.Result.ToolCalls[0].Output, "denied") || len(o.Result.Artifacts) != 0 {
		t.Fatalf("a denied path: %+v", o.Result)
	}
	o = h.ask("7", "m2", "reports/week.txt")
	if len(o.Result.Artifacts) != 1 || o.Result.Artifacts[0].Name != "week.txt" || o.Result.Artifacts[0].FileID != "id-week.txt" {
		t.Fatalf("an allowed path: %+v", o.Result)
	}
	for _, m := range h.out.all() {
		if strings.Contains(m.Text, "keys.txt") {
			t.Fatalf("the denied file reached the chat: %q", m.Text)
		}
	}
	e := <-sub.C
	if e.Artifact == nil || e.Artifact.Name != "week.txt" || !strings.HasPrefix(e.Artifact.URL, "/api/files/") || e.Artifact.MIME != "text/plain" {
		t.Fatalf("artifact event %+v", e.Artifact)
	}
}
