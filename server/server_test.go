package server_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/server"
)

func TestHealth(t *testing.T) {
	e := newEnv(t, setup{token: "s3cret"})
	r := e.get("/health")
	if r.status != http.StatusOK || r.json(t)["status"] != "ok" {
		t.Fatalf("GET /health = %d %s", r.status, r.body)
	}
	if id := r.header.Get("X-Request-Id"); !strings.HasPrefix(id, "r-") {
		t.Errorf("X-Request-Id = %q", id)
	}
}

func TestExecuteRepliesThroughChatSend(t *testing.T) {
	e := newEnv(t, setup{})
	r := e.execute(map[string]any{"instructions": "hi", "userId": "u7"})
	res := r.result(t)

	if !res.Success || len(res.Replies) != 1 || res.Replies[0] != "echo: hi" {
		t.Fatalf("result = %+v, want success and replies [\"echo: hi\"]", res)
	}
	if len(res.ToolCalls) != 1 || res.ToolCalls[0].Tool != "chat_send" || res.ToolCalls[0].Input["text"] != "echo: hi" {
		t.Errorf("toolCalls = %+v", res.ToolCalls)
	}
	if res.ChatKey != "api:chat:default" || !strings.HasPrefix(res.MessageID, "api-") {
		t.Errorf("chatKey %q messageId %q", res.ChatKey, res.MessageID)
	}

	es := e.entries("api:chat:default")
	if len(es) != 2 {
		t.Fatalf("ChatStore holds %d entries, want user + assistant: %+v", len(es), es)
	}
	u, a := es[0], es[1]
	if u.Role != chat.RoleUser || u.Channel != chat.ChannelAPI || u.Text != "hi" || u.ChatID != "default" ||
		u.MessageID != res.MessageID || u.UserID != "u7" {
		t.Errorf("user entry = %+v", u)
	}
	if a.Role != chat.RoleAssistant || a.Channel != chat.ChannelAPI || a.Text != "echo: hi" {
		t.Errorf("assistant entry = %+v", a)
	}

	// The run's own log lines and the access line share the request id.
	id := r.header.Get("X-Request-Id")
	var access, run bool
	for _, line := range strings.Split(e.logs.String(), "\n") {
		if contains(line, `"requestId":"`+id+`"`) {
			access = access || contains(line, `"message":"http request"`)
			run = run || contains(line, `"message":"run finished"`)
		}
	}
	if !access || !run {
		t.Errorf("requestId %s: on the access line %v, on the run's line %v", id, access, run)
	}
}

func TestExecuteFallbackLandsInRepliesOnce(t *testing.T) {
	e := newEnv(t, setup{handler: func(fakeopenai.Request) fakeopenai.Response {
		return fakeopenai.Response{Content: "plain answer"}
	}})
	r := e.execute(map[string]any{"instructions": "question", "chatId": "fb", "messageId": "m-1"})
	res := r.result(t)
	if !res.Success || res.Output != "plain answer" || len(res.Replies) != 1 || res.Replies[0] != "plain answer" {
		t.Fatalf("result = %+v, want the fallback text in replies exactly once", res)
	}
	if !contains(string(r.body), `"toolCalls":[]`) {
		t.Errorf("toolCalls is not an empty array: %s", r.body)
	}
	if res.MessageID != "m-1" || res.ChatKey != "api:chat:fb" {
		t.Errorf("messageId %q chatKey %q", res.MessageID, res.ChatKey)
	}
	es := e.entries("api:chat:fb")
	if len(es) != 2 || es[0].MessageID != "m-1" || es[1].Role != chat.RoleAssistant || es[1].Text != "plain answer" {
		t.Errorf("entries = %+v", es)
	}
}

func TestExecuteConcurrentChatsAndHistory(t *testing.T) {
	e := newEnv(t, setup{})
	var wg sync.WaitGroup
	results := make([]response, 2)
	for i, chatID := range []string{"x", "y"} {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			r, err := e.do(ctx, http.MethodPost, "/api/execute",
				[]byte(`{"instructions":"first in `+chatID+`","chatId":"`+chatID+`"}`), nil)
			if err != nil {
				t.Error(err)
			}
			results[i] = r
		})
	}
	wg.Wait()
	for i, chatID := range []string{"x", "y"} {
		res := results[i].result(t)
		if len(res.Replies) != 1 || res.Replies[0] != "echo: first in "+chatID {
			t.Errorf("chat %s replies = %q", chatID, res.Replies)
		}
	}

	res := e.execute(map[string]any{"instructions": "second", "chatId": "x"}).result(t)
	if len(res.Replies) != 1 || res.Replies[0] != "echo: second" {
		t.Fatalf("second turn replies = %q", res.Replies)
	}
	var prompt []fakeopenai.Message
	for _, req := range e.fake.Requests() {
		if req.LastUser() == "second" {
			prompt = req.Messages
			break
		}
	}
	var sawFirst, sawOther bool
	for _, m := range prompt {
		sawFirst = sawFirst || (m.Role == "user" && m.Content == "first in x")
		sawOther = sawOther || contains(m.Content, "first in y")
	}
	if !sawFirst || sawOther {
		t.Errorf("second prompt of chat x: first turn seen %v, chat y seen %v: %+v", sawFirst, sawOther, prompt)
	}
	if last := prompt[len(prompt)-1]; last.Role != "user" || last.Content != "second" {
		t.Errorf("prompt does not end with the user's text: %+v", last)
	}
}

func TestExecuteRejectsBadInput(t *testing.T) {
	e := newEnv(t, setup{})
	cases := []struct {
		name, body, mention string
	}{
		{"malformed JSON", `{"instructions":`, "JSON"},
		{"not an object", `["hi"]`, "object"},
		{"null body", `null`, "object"},
		{"empty body", ``, "empty"},
		{"trailing data", `{"instructions":"hi"} {}`, "after"},
		{"unknown field", `{"instructions":"hi","prompt":"x"}`, "prompt"},
		{"wrong type", `{"instructions":5}`, "instructions"},
		{"missing instructions", `{"chatId":"a"}`, "instructions"},
		{"blank instructions", `{"instructions":" \n\t "}`, "instructions"},
		{"bad chatId", `{"instructions":"hi","chatId":"../etc"}`, "chatId"},
		{"empty chatId", `{"instructions":"hi","chatId":""}`, "chatId"},
		{"long chatId", `{"instructions":"hi","chatId":"` + strings.Repeat("a", 129) + `"}`, "chatId"},
		{"invalid UTF-8", "{\"instructions\":\"hi \xff\"}", "UTF-8"},
		{"too long", `{"instructions":"` + strings.Repeat("é", 10_001) + `"}`, "10000"},
		{"conflicting user ids", `{"instructions":"hi","userId":"a","actorId":"b"}`, "actorId"},
		{"tools that allow", `{"instructions":"hi","tools":{"allow":["exec_shell"]}}`, "only narrow"},
		{"tools with a bad rule", `{"instructions":"hi","tools":{"deny":["exec_shell(rm"]}}`, "deny"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.request(http.MethodPost, "/api/execute", []byte(c.body), nil)
			if r.status != http.StatusBadRequest || r.errorCode(t) != "INVALID_INPUT" {
				t.Fatalf("status %d body %s, want 400 INVALID_INPUT", r.status, r.body)
			}
			if msg := r.message(t); !contains(msg, c.mention) {
				t.Errorf("message %q does not mention %q", msg, c.mention)
			}
		})
	}
	if n := e.fake.RequestCount(); n != 0 {
		t.Errorf("rejected requests reached the model %d times", n)
	}
	keys, err := e.engine.ChatKeys(context.Background())
	if err != nil || len(keys) != 0 {
		t.Errorf("rejected requests changed the ChatStore: %v %v", keys, err)
	}
}

func TestExecuteAcceptsLongestInstructions(t *testing.T) {
	e := newEnv(t, setup{})
	text := strings.Repeat("é", 10_000)
	res := e.execute(map[string]any{"instructions": text, "actorId": "a1"}).result(t)
	if len(res.Replies) != 1 || res.Replies[0] != "echo: "+text {
		t.Fatalf("reply to a 10,000-character turn is wrong (%d replies)", len(res.Replies))
	}
	if u := e.entries("api:chat:default")[0]; u.UserID != "a1" {
		t.Errorf("actorId not used as userId: %+v", u)
	}
}

func TestExecuteBodyTooLarge(t *testing.T) {
	e := newEnv(t, setup{})
	body := `{"instructions":"` + strings.Repeat("a", 1<<20) + `"}`
	r := e.request(http.MethodPost, "/api/execute", []byte(body), nil)
	if r.status != http.StatusRequestEntityTooLarge || r.errorCode(t) != "PAYLOAD_TOO_LARGE" {
		t.Fatalf("status %d body %s, want 413 PAYLOAD_TOO_LARGE", r.status, r.body)
	}
}

func TestAuth(t *testing.T) {
	const token = "s3cret-token-value"
	e := newEnv(t, setup{token: token})
	for _, hdr := range []map[string]string{
		nil,
		{"Authorization": "Bearer wrong"},
		{"Authorization": "Bearer " + token + "x"},
		{"Authorization": "Basic " + token},
	} {
		for _, path := range []string{"/api/status", "/api/nope"} {
			r := e.request(http.MethodGet, path, nil, hdr)
			if r.status != http.StatusUnauthorized || r.errorCode(t) != "UNAUTHORIZED" {
				t.Errorf("GET %s with %v = %d %s, want 401", path, hdr, r.status, r.body)
			}
			if r.header.Get("WWW-Authenticate") != "Bearer" {
				t.Errorf("WWW-Authenticate = %q", r.header.Get("WWW-Authenticate"))
			}
		}
	}
	r := e.request(http.MethodPost, "/api/execute", []byte(`{"instructions":"hi"}`), nil)
	if r.status != http.StatusUnauthorized {
		t.Errorf("execute without token = %d", r.status)
	}

	ok := map[string]string{"Authorization": "Bearer " + token}
	if r := e.request(http.MethodGet, "/api/status", nil, ok); r.status != http.StatusOK {
		t.Errorf("status with token = %d %s", r.status, r.body)
	}
	r = e.request(http.MethodPost, "/api/execute", []byte(`{"instructions":"hi"}`), ok)
	if res := r.result(t); len(res.Replies) != 1 {
		t.Errorf("execute with token = %+v", res)
	}
	if r := e.get("/health"); r.status != http.StatusOK {
		t.Errorf("/health with auth on = %d", r.status)
	}
	if contains(e.logs.String(), token) {
		t.Error("the token appears in the log")
	}
}

func TestUnknownRouteAndWrongMethod(t *testing.T) {
	e := newEnv(t, setup{})
	r := e.get("/nope")
	if r.status != http.StatusNotFound || r.errorCode(t) != "NOT_FOUND" {
		t.Errorf("GET /nope = %d %s", r.status, r.body)
	}
	r = e.get("/api/execute")
	if r.status != http.StatusMethodNotAllowed || r.errorCode(t) != "METHOD_NOT_ALLOWED" {
		t.Errorf("GET /api/execute = %d %s", r.status, r.body)
	}
	if allow := r.header.Get("Allow"); !contains(allow, "POST") {
		t.Errorf("Allow = %q", allow)
	}
	r = e.request(http.MethodDelete, "/health", nil, nil)
	if r.status != http.StatusMethodNotAllowed || r.errorCode(t) != "METHOD_NOT_ALLOWED" {
		t.Errorf("DELETE /health = %d %s", r.status, r.body)
	}
}

func TestStatus(t *testing.T) {
	e := newEnv(t, setup{adapters: func() []server.AdapterStatus {
		return []server.AdapterStatus{{Name: "telegram", State: "running"}}
	}})
	m := e.get("/api/status").json(t)
	if m["version"] != "1.2.3-test" || m["model"] != "openai/m" {
		t.Errorf("status = %v", m)
	}
	if _, ok := m["uptimeSeconds"].(float64); !ok {
		t.Errorf("uptimeSeconds = %v", m["uptimeSeconds"])
	}
	if s, _ := m["startedAt"].(string); len(s) < 20 {
		t.Errorf("startedAt = %v", m["startedAt"])
	}
	q := m["queue"].(map[string]any)
	if q["capacity"] != float64(1000) || q["concurrency"] != float64(1) || q["running"] != float64(0) {
		t.Errorf("queue = %v", q)
	}
	if keys, ok := q["runningChatKeys"].([]any); !ok || len(keys) != 0 {
		t.Errorf("runningChatKeys = %v", q["runningChatKeys"])
	}
	if a := m["adapters"].([]any); len(a) != 1 {
		t.Errorf("adapters = %v", a)
	}

	bare := newEnv(t, setup{})
	if r := bare.get("/api/status"); !contains(string(r.body), `"adapters":[]`) {
		t.Errorf("adapters without a reporter is not []: %s", r.body)
	}
}

func TestPanicBecomesJSON500(t *testing.T) {
	e := newEnv(t, setup{adapters: func() []server.AdapterStatus { panic("adapter report broke") }})
	r := e.get("/api/status")
	if r.status != http.StatusInternalServerError || r.errorCode(t) != "INTERNAL" {
		t.Fatalf("status = %d %s, want 500 INTERNAL", r.status, r.body)
	}
	if contains(string(r.body), "adapter report broke") {
		t.Error("the panic value leaked into the body")
	}
	if !contains(e.logs.String(), "handler panicked") {
		t.Error("the panic was not logged")
	}
}

func TestExecuteModelFailure(t *testing.T) {
	e := newEnv(t, setup{handler: func(fakeopenai.Request) fakeopenai.Response {
		return fakeopenai.Response{Status: http.StatusBadRequest, ErrorMessage: "bad request"}
	}})
	res := e.execute(map[string]any{"instructions": "hi"}).result(t)
	if res.Success || res.Output == "" || len(res.Replies) != 1 || res.Replies[0] != res.Output {
		t.Fatalf("result = %+v, want success false and the apology delivered once", res)
	}
}
