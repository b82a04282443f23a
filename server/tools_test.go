package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/policy"
)

func TestToolsListsEachToolWithItsEffectivePolicy(t *testing.T) {
	pol, err := policy.Parse(json.RawMessage(`{
	  "deny": ["chat_load_history"],
	  "roles": {"admin": {"members": ["telegram:1"], "approve": true}},
	  "chats": {"telegram:chat:-100*": {"deny": ["chat_send"]}}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, setup{policy: pol})
	q := url.Values{"user": {"telegram:1"}, "chatKey": {"telegram:chat:-1005"}}
	r := e.get("/api/tools?" + q.Encode())
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var rep engine.ToolsReport
	if err := json.Unmarshal(r.body, &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.CanApprove || len(rep.Roles) != 1 || rep.Roles[0] != "admin" {
		t.Errorf("roles %v, canApprove %v", rep.Roles, rep.CanApprove)
	}
	byName := map[string]engine.ToolInfo{}
	for _, ti := range rep.Tools {
		byName[ti.Name] = ti
	}
	send, hist := byName["chat_send"], byName["chat_load_history"]
	if send.Description == "" || send.Offered || send.Decision == nil || send.Decision.Verdict != policy.Deny ||
		send.Decision.Layer != policy.LayerChat || len(send.Rules) != 1 {
		t.Errorf("chat_send in the group = %+v (decision %+v)", send, send.Decision)
	}
	if hist.Offered || hist.Decision.Layer != policy.LayerGlobal {
		t.Errorf("chat_load_history = %+v", hist)
	}
	// Elsewhere, chat_send is allowed by default.
	r = e.get("/api/tools?chatKey=api:chat:x")
	_ = json.Unmarshal(r.body, &rep)
	for _, ti := range rep.Tools {
		if ti.Name == "chat_send" && (!ti.Offered || ti.Decision.Layer != policy.LayerDefault) {
			t.Errorf("chat_send outside the group = %+v", ti)
		}
	}
	if r := e.get("/api/tools?user=12345"); r.status != http.StatusBadRequest {
		t.Errorf("a user without a channel: status %d", r.status)
	}
}
