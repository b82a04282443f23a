package server_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/runtime/jobs"
	"github.com/shipmyagent/ship/server"
)

// apiJobsPolicy: api:starter may run wait.sh (in the background too),
// api:mallory has no role, api:ops may approve.
const apiJobsPolicy = `{
  "roles": {
    "starter": {"members": ["api:starter"], "allow": ["exec_shell(sh wait.sh)"]},
    "ops":     {"members": ["api:ops"], "approve": true}
  }
}`

var (
	asStarter = map[string]string{"Authorization": "Bearer starter-token-0123456789abcdef"}
	asMallory = map[string]string{"Authorization": "Bearer mallory-token-0123456789abcdef"}
)

// TestAnAPICallerCannotCancelAnotherTokensJob is an outsider with a token of
// their own (api:mallory, no role) trying to stop the background job another
// token started, through the real HTTP API: plainly, claiming the starter's
// userId in the body, with a disguised id, and from another chat. Each is
// refused and the job keeps running; /jobs still lists it; an approver's
// token cancels it.
func TestAnAPICallerCannotCancelAnotherTokensJob(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "wait.sh"), []byte("until [ -e go ]; do sleep 0.05; done; echo built\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := jobs.Open(jobs.Options{Path: filepath.Join(dir, ".ship", "jobs.json")})
	if err != nil {
		t.Fatal(err)
	}
	e := shellEnv(t, apiJobsPolicy, setup{dir: dir, jobs: m, opts: func(o *server.Options) {
		o.Tokens = []server.NamedToken{
			{Name: "starter", Token: "starter-token-0123456789abcdef", Identity: "api:starter"},
			{Name: "mallory", Token: "mallory-token-0123456789abcdef", Identity: "api:mallory"},
			{Name: "ops", Token: "ops-token-0123456789abcdef0123", Identity: "api:ops"},
		}
	}})
	// Whatever happens, the job's script may end when the test does.
	t.Cleanup(func() { _ = os.WriteFile(filepath.Join(dir, "go"), nil, 0o600) })

	started := e.command("/api/execute", "build", "bg: sh wait.sh", "", asStarter).result(t)
	if !strings.Contains(strings.Join(started.Replies, "\n")+started.Output, "J1") {
		t.Fatalf("the starter's background job: %+v", started)
	}
	running := func() bool {
		list := e.engine.Jobs("api:chat:build")
		return len(list) == 1 && list[0].State == jobs.Running
	}
	if !running() {
		t.Fatalf("jobs after the start: %+v", e.engine.Jobs(""))
	}

	const refusal = "Only whoever started job J1, or an approver"
	for _, try := range []struct {
		name string
		path string
		chat string
		body map[string]string
	}{
		{"plain", "/api/execute", "build", map[string]string{"instructions": "/cancel J1"}},
		{"the starter's userId", "/api/execute", "build", map[string]string{"instructions": "/cancel J1", "userId": "api:starter"}},
		{"the starter's bare userId", "/api/send", "build", map[string]string{"message": "/cancel j1", "userMessageId": "c1", "userId": "starter"}},
		{"a tab after the id", "/api/execute", "build", map[string]string{"instructions": "/cancel J1\t now"}},
		{"a no-break space after the id", "/api/send", "build", map[string]string{"message": "/cancel j1\u00a0 now", "userMessageId": "c2"}},
	} {
		try.body["chatId"] = try.chat
		raw, _ := json.Marshal(try.body)
		r := e.request(http.MethodPost, try.path, raw, asMallory)
		if r.status != http.StatusOK || !strings.Contains(string(r.body), refusal) {
			t.Errorf("%s: mallory's /cancel answered %d %s; want a refusal", try.name, r.status, r.body)
		}
		if !running() {
			t.Fatalf("%s: mallory's /cancel stopped the starter's job: %+v", try.name, e.engine.Jobs(""))
		}
	}
	if r := e.command("/api/execute", "elsewhere", "/cancel J1", "", asMallory).result(t); r.Success || !strings.Contains(r.Output, "no job J1 in this chat") {
		t.Errorf("/cancel from another chat: %+v", r)
	}
	if r := e.command("/api/execute", "build", "/jobs", "", asMallory).result(t); !strings.Contains(r.Output, "J1 running") {
		t.Errorf("/jobs: %+v", r)
	}
	if !running() {
		t.Fatalf("the job stopped: %+v", e.engine.Jobs(""))
	}

	if r := e.command("/api/execute", "build", "/cancel j1", "", asOps).result(t); !r.Success || !strings.Contains(r.Output, "Cancelling job J1") {
		t.Fatalf("the approver's /cancel: %+v", r)
	}
	waitFor(t, "the job cancelled by the approver", func() bool {
		list := e.engine.Jobs("api:chat:build")
		return len(list) == 1 && list[0].State == jobs.Cancelled && list[0].CancelledBy == "api:ops"
	})
}

// TestAnAPICallerCannotApproveOrDenyByClaimingAUserID: a token without an
// approving role (api:mallory) names the approver, then the asker, as the
// body's userId, and sends /approve and /deny for the asker's request. The
// token's identity is all that counts: both are refused and the request
// still waits.
func TestAnAPICallerCannotApproveOrDenyByClaimingAUserID(t *testing.T) {
	e := shellEnv(t, apiApprovalPolicy, setup{opts: func(o *server.Options) {
		o.Tokens = []server.NamedToken{
			{Name: "caller", Token: "caller-token-0123456789abcdef", Identity: "api:caller"},
			{Name: "ops", Token: "ops-token-0123456789abcdef0123", Identity: "api:ops"},
			{Name: "mallory", Token: "mallory-token-0123456789abcdef", Identity: "api:mallory"},
		}
	}})
	code, _ := e.askApproval("work")
	for _, try := range []struct{ text, userID string }{
		{"/approve " + code, "api:ops"},
		{"/approve " + code, "ops"},
		{"/deny " + code, "api:caller"},
		{"/deny " + code, "caller"},
	} {
		raw, _ := json.Marshal(map[string]string{"chatId": "work", "instructions": try.text, "userId": try.userID})
		r := e.request(http.MethodPost, "/api/execute", raw, asMallory).result(t)
		if r.Success || strings.Contains(r.Output, "Approved") || strings.Contains(r.Output, "Denied") {
			t.Errorf("%q as userId %q with mallory's token: %+v; want a refusal", try.text, try.userID, r)
		}
	}
	if pending, _ := e.engine.Pending(""); len(pending) != 1 {
		t.Fatalf("pending after mallory's commands: %+v; want %s still waiting", pending, code)
	}
	for _, en := range e.entries("api:chat:work") {
		if en.Role == "assistant" && strings.Contains(en.Text, "shell-ran") {
			t.Errorf("the call ran: %+v", en)
		}
	}
}
