package server_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/shipmyagent/ship/runtime/events"
	"github.com/shipmyagent/ship/server"
)

// consoleApprovalPolicy lets an api caller run echo, each call only once
// someone approves it; the members of role admin may.
const consoleApprovalPolicy = `{
  "roles": {
    "caller": {"members": ["api:anonymous"], "allow": ["exec_shell(echo *)"]},
    "admin":  {"members": ["telegram:boss"], "approve": true}
  },
  "chats": {"api:chat:*": {"requireApproval": ["exec_shell"]}},
  "approvalTTLSeconds": 600
}`

// TestTheConsoleDecidesOnlyAsARoleThatMayApprove: the console answers an
// approval through the engine's Decide, as /approve in a chat does; without
// server.consoleRole it is told to set one, and as a role that may not
// approve it gets the chat's refusal. Nothing is approved either way.
func TestTheConsoleDecidesOnlyAsARoleThatMayApprove(t *testing.T) {
	for _, tc := range []struct{ role, says string }{
		{"", "set server.consoleRole"},
		{"caller", "role admin may"},
	} {
		t.Run("role "+tc.role, func(t *testing.T) {
			e := shellEnv(t, consoleApprovalPolicy, setup{opts: func(o *server.Options) { o.Console, o.ConsoleRole = true, tc.role }})
			sub, _ := e.engine.Subscribe(func(ev events.Event) bool { return ev.Type == events.TypeApprovalRequired }, 0, 16)
			defer sub.Close()
			e.ask(nil, nil)
			var code string
			select {
			case ev := <-sub.C:
				code = ev.ApprovalCode
			case <-time.After(hangGuard):
				t.Fatal("hang guard: no approval was asked for")
			}

			c := consoleClient(t, e)
			_, page := get(t, c, e, "/approvals")
			if !strings.Contains(page, code) {
				t.Fatalf("the approvals page does not list %s:\n%s", code, page)
			}
			resp, body := postForm(t, c, e, "/console/approvals/"+code+"/approve", url.Values{"csrf": {csrfOf(t, page)}}, nil)
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, tc.says) {
				t.Errorf("approve as role %q: %d %q; want 403 saying %q", tc.role, resp.StatusCode, body, tc.says)
			}
			if pending, _ := e.engine.Pending(""); len(pending) != 1 || pending[0].Code != code {
				t.Errorf("pending after the refusal: %+v; want %s still waiting", pending, code)
			}
		})
	}
}
