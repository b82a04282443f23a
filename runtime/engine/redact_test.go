package engine_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/events"
)

// A secret written into a command (a user pasted it, or the model put it
// there) is hidden on every way out of the process, not only in the log
// and the chat log: the live event stream (what the console and SSE
// clients show) and the run's result (/api/execute's toolCalls).
func TestASecretInAToolCallIsRedactedOnEveryWayOut(t *testing.T) {
	const secret = "sk-very-secret-0123456789"
	h := newHarness(t, harnessOptions{handler: fakeopenai.RunCommands, exec: true, policy: adminPolicy, secrets: []string{secret}})
	sub, _ := h.engine.Subscribe(func(events.Event) bool { return true }, 0, 256)
	defer sub.Close()

	// Allowed (echo), then refused by the global deny: both paths publish
	// the command.
	o := h.ask("1", "m1", "run: echo "+secret)
	refused := h.ask("1", "m2", "run: rm -rf /tmp/"+secret)

	for _, out := range []string{mustJSON(t, o.Result.ToolCalls), mustJSON(t, refused.Result.ToolCalls)} {
		if strings.Contains(out, secret) {
			t.Errorf("the run's toolCalls carry the secret: %s", out)
		}
		if !strings.Contains(out, `\u003credacted\u003e`) {
			t.Errorf("the run's toolCalls do not show where the secret was: %s", out)
		}
	}

	seen := map[string]bool{}
	for done := 0; done < 2; {
		e := <-sub.C
		if e.Type == events.TypeTaskCompleted || e.Type == events.TypeError {
			done++
		}
		b := mustJSON(t, e)
		if strings.Contains(b, secret) {
			t.Errorf("%s event carries the secret: %s", e.Type, b)
		}
		if strings.Contains(b, `\u003credacted\u003e`) {
			seen[e.Type] = true
		}
	}
	for _, typ := range []string{events.TypeToolCall, events.TypeAbilityRequest, events.TypeToolResult, events.TypePolicyRejected} {
		if !seen[typ] {
			t.Errorf("no %s event showed the redacted command", typ)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
