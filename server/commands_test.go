package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shipmyagent/ship/runtime/events"
	"github.com/shipmyagent/ship/server"
)

// apiApprovalPolicy: api:caller may run echo once approved; api:ops may
// approve.
const apiApprovalPolicy = `{
  "roles": {
    "caller": {"members": ["api:caller"], "allow": ["exec_shell(echo *)"]},
    "ops":    {"members": ["api:ops"], "approve": true}
  },
  "chats": {"api:chat:*": {"requireApproval": ["exec_shell"]}},
  "approvalTTLSeconds": 600
}`

func apiApprovalEnv(t *testing.T) *env {
	return shellEnv(t, apiApprovalPolicy, setup{opts: func(o *server.Options) {
		o.Tokens = []server.NamedToken{
			{Name: "caller", Token: "caller-token-0123456789abcdef", Identity: "api:caller"},
			{Name: "ops", Token: "ops-token-0123456789abcdef0123", Identity: "api:ops"},
		}
	}})
}

var (
	asCaller = map[string]string{"Authorization": "Bearer caller-token-0123456789abcdef"}
	asOps    = map[string]string{"Authorization": "Bearer ops-token-0123456789abcdef0123"}
)

// askApproval runs the echo as the caller in chat chatID and returns the
// approval's code and the text the chat was shown.
func (e *env) askApproval(chatID string) (code, shown string) {
	e.t.Helper()
	sub, _ := e.engine.Subscribe(func(ev events.Event) bool { return ev.Type == events.TypeApprovalRequired }, 0, 16)
	defer sub.Close()
	body, _ := json.Marshal(map[string]string{"instructions": "run: echo shell-ran", "chatId": chatID})
	res := e.request(http.MethodPost, "/api/execute", body, asCaller).result(e.t)
	select {
	case ev := <-sub.C:
		code = ev.ApprovalCode
	case <-time.After(hangGuard):
		e.t.Fatal("hang guard: no approval was asked for")
	}
	return code, strings.Join(res.Replies, "\n")
}

// command sends text into api chat chatID through path as as; id is the
// userMessageId /api/send needs.
func (e *env) command(path, chatID, text, id string, as map[string]string) response {
	e.t.Helper()
	m := map[string]string{"chatId": chatID}
	if path == "/api/send" {
		m["message"], m["userMessageId"] = text, id
	} else {
		m["instructions"] = text
	}
	body, _ := json.Marshal(m)
	return e.request(http.MethodPost, path, body, as)
}

// An api chat takes /approve and /deny as its message, with a chat's rules:
// the asker may not approve, an approver may not answer from another chat,
// and an approver's /approve in the chat runs the call.
func TestAnAPIChatTakesApproveAndDeny(t *testing.T) {
	e := apiApprovalEnv(t)
	code, shown := e.askApproval("work")
	if !strings.Contains(shown, "/approve "+code) || !strings.Contains(shown, "POST /api/execute") {
		t.Errorf("the approval request says %q; want /approve %s and how to send it from an api chat", shown, code)
	}

	r := e.command("/api/execute", "work", "/approve "+code, "", asCaller).result(t)
	if r.Success || !strings.Contains(r.Output, "role ops") {
		t.Errorf("the asker's /approve: %+v; want a refusal naming role ops", r)
	}
	r = e.command("/api/execute", "elsewhere", "/approve "+code, "", asOps).result(t)
	if r.Success || !strings.Contains(r.Output, "another chat") {
		t.Errorf("/approve from another chat: %+v; want a refusal", r)
	}
	if pending, _ := e.engine.Pending(""); len(pending) != 1 {
		t.Fatalf("pending after the refusals: %+v; want %s still waiting", pending, code)
	}

	r = e.command("/api/execute", "work", "/approve "+strings.ToLower(code), "", asOps).result(t)
	if !r.Success || !strings.Contains(r.Output, "Approved "+code) {
		t.Fatalf("the approver's /approve: %+v", r)
	}
	waitFor(t, "the approved call's result in the chat", func() bool {
		for _, en := range e.entries("api:chat:work") {
			if en.Role == "assistant" && strings.Contains(en.Text, "shell-ran") {
				return true
			}
		}
		return false
	})
	for _, en := range e.entries("api:chat:work") {
		if strings.HasPrefix(strings.TrimSpace(en.Text), "/approve") && en.Role == "user" {
			t.Errorf("the command went to the agent as a message: %+v", en)
		}
	}

	// /api/send: the asker may deny their own request.
	code2, _ := e.askApproval("work")
	sr := e.command("/api/send", "work", "  /DENY\t"+code2+" not now", "deny-1", asCaller)
	var body struct{ Status, Reply string }
	if err := json.Unmarshal(sr.body, &body); err != nil || sr.status != http.StatusOK || body.Status != "ok" || !strings.Contains(body.Reply, "Denied "+code2) {
		t.Errorf("/deny through /api/send: %d %s", sr.status, sr.body)
	}
	if pending, _ := e.engine.Pending(""); len(pending) != 0 {
		t.Errorf("still pending after approve and deny: %+v", pending)
	}
	sr = e.command("/api/send", "work", "/deny", "deny-2", asCaller)
	if err := json.Unmarshal(sr.body, &body); err != nil || body.Status != "refused" || !strings.Contains(body.Reply, "Usage: /deny CODE") {
		t.Errorf("/deny without a code: %s", sr.body)
	}
}
