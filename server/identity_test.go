package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/policy"
	"github.com/shipmyagent/ship/server"
)

// shellPolicy gives exec_shell to the members of one role each: a body's
// userId "boss", the console, and a named token's identity.
const shellPolicy = `{
  "roles": {
    "boss":    {"members": ["api:boss"], "allow": ["exec_shell"]},
    "console": {"members": ["api:console"], "allow": ["exec_shell"]},
    "ci":      {"members": ["api:ci-bot"], "allow": ["exec_shell"]}
  }
}`

func mustPolicy(t *testing.T, raw string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse(json.RawMessage(raw))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// shellEnv serves the API with exec_shell behind pol; the model runs
// "run: CMD" with the shell when it is offered and says "no shell" when not.
func shellEnv(t *testing.T, pol string, o setup) *env {
	t.Helper()
	o.handler = fakeopenai.RunCommands
	o.exec = true
	o.policy = mustPolicy(t, pol)
	return newEnv(t, o)
}

// ask runs "run: echo shell-ran" with body fields extra and headers h, and
// returns what the agent replied.
func (e *env) ask(extra map[string]any, h map[string]string) string {
	e.t.Helper()
	body := map[string]any{"instructions": "run: echo shell-ran"}
	for k, v := range extra {
		body[k] = v
	}
	b, err := json.Marshal(body)
	if err != nil {
		e.t.Fatal(err)
	}
	res := e.request(http.MethodPost, "/api/execute", b, h).result(e.t)
	return strings.Join(res.Replies, "\n")
}

func ranShell(reply string) bool { return strings.Contains(reply, "shell-ran\\n") }

func TestASelfAssertedUserIDGetsNoRole(t *testing.T) {
	// No token: a loopback caller is anonymous whatever userId it sends.
	e := shellEnv(t, shellPolicy, setup{})
	if got := e.ask(map[string]any{"userId": "boss"}, nil); got != "no shell" {
		t.Errorf(`an unauthenticated "userId":"boss" got %q; want "no shell" (api:boss's role is not theirs)`, got)
	}
	if got := e.ask(map[string]any{"actorId": "boss"}, nil); got != "no shell" {
		t.Errorf(`an unauthenticated "actorId":"boss" got %q; want "no shell"`, got)
	}
	// The body's userId is still the label of the message in the chat log.
	es := e.entries("api:chat:default")
	if len(es) == 0 || es[0].UserID != "boss" {
		t.Errorf("the chat log's first entry is %+v; want userId boss as its label", es)
	}
}

func TestTheSingleTokenActsAsAPIToken(t *testing.T) {
	e := shellEnv(t, shellPolicy, setup{token: "the-operator-token"})
	auth := map[string]string{"Authorization": "Bearer the-operator-token"}
	if got := e.ask(map[string]any{"userId": "boss"}, auth); got != "no shell" {
		t.Errorf(`the server token with "userId":"boss" got %q; want "no shell"`, got)
	}
}

func TestTheConsoleWithoutATokenIsAnonymous(t *testing.T) {
	e := shellEnv(t, shellPolicy, setup{opts: withConsole})
	if reply := consoleAsk(t, e, consoleClient(t, e)); reply != "no shell" {
		t.Errorf("a console without a token (anyone on this machine) got %q; want api:console's role withheld", reply)
	}
}

// ciToken is a named token acting as api:ci-bot.
const ciToken = "ci-token-0123456789abcdef0123456789abcdef"

func withCIToken(o *server.Options) {
	o.Tokens = []server.NamedToken{{Name: "ci", Token: ciToken, Identity: "api:ci-bot"}}
}

func TestANamedTokenActsAsItsIdentity(t *testing.T) {
	e := shellEnv(t, shellPolicy, setup{token: "the-operator-token", opts: withCIToken})
	ci := map[string]string{"Authorization": "Bearer " + ciToken}
	if got := e.ask(nil, ci); !ranShell(got) {
		t.Errorf("the ci token got %q; want api:ci-bot's role to run the shell", got)
	}
	// The operator's token is not api:ci-bot: no shell.
	if got := e.ask(nil, map[string]string{"Authorization": "Bearer the-operator-token"}); got != "no shell" {
		t.Errorf("the server token got %q; want no shell", got)
	}
	// Without a token there is no answer at all.
	if r := e.request(http.MethodPost, "/api/execute", []byte(`{"instructions":"run: echo x"}`), nil); r.status != http.StatusUnauthorized {
		t.Errorf("no token: %d", r.status)
	}
}

func TestABodyUserIDCannotChangeANamedTokensIdentity(t *testing.T) {
	// boss may run the shell, ci-bot may not.
	pol := `{"roles": {"boss": {"members": ["api:boss"], "allow": ["exec_shell"]}}}`
	e := shellEnv(t, pol, setup{opts: withCIToken})
	ci := map[string]string{"Authorization": "Bearer " + ciToken}
	if got := e.ask(map[string]any{"userId": "boss", "chatId": "web"}, ci); got != "no shell" {
		t.Errorf(`the ci token with "userId":"boss" got %q; want ci-bot's rights (no shell)`, got)
	}
	// The userId stays the message's label, and the entry says who acted.
	es := e.entries("api:chat:web")
	if len(es) == 0 || es[0].UserID != "boss" || es[0].Meta["identity"] != "api:ci-bot" {
		t.Errorf("the user entry is %+v; want userId boss (a label) and meta identity api:ci-bot", es)
	}

	// /api/send likewise.
	b := []byte(`{"userMessageId":"s1","message":"run: echo shell-ran","userId":"boss","chatId":"sent"}`)
	if r := e.request(http.MethodPost, "/api/send", b, ci); r.status != http.StatusOK {
		t.Fatalf("send: %d %s", r.status, r.body)
	}
	var reply string
	waitFor(t, "the sent message's reply", func() bool {
		for _, en := range e.entries("api:chat:sent") {
			if en.Role == "assistant" {
				reply = en.Text
				return true
			}
		}
		return false
	})
	if reply != "no shell" {
		t.Errorf(`/api/send with the ci token and "userId":"boss" got %q; want no shell`, reply)
	}
}

func TestAPIStarDoesNotCoverAnonymousCallers(t *testing.T) {
	pol := `{"roles": {"everyone": {"members": ["api:*"], "allow": ["exec_shell"]}}}`
	e := shellEnv(t, pol, setup{})
	if got := e.ask(nil, nil); got != "no shell" {
		t.Errorf("an anonymous caller got %q under an api:* role; want no shell", got)
	}
	named := shellEnv(t, pol, setup{opts: withCIToken})
	if got := named.ask(nil, map[string]string{"Authorization": "Bearer " + ciToken}); !ranShell(got) {
		t.Errorf("a named token got %q under an api:* role; want the shell", got)
	}
}

func TestTheSignedInConsoleActsAsAPIConsole(t *testing.T) {
	e := shellEnv(t, shellPolicy, setup{token: consoleToken, opts: withConsole})
	c := consoleClient(t, e)
	if resp, _ := postForm(t, c, e, "/login", url.Values{"token": {consoleToken}}, nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %d", resp.StatusCode)
	}
	if reply := consoleAsk(t, e, c); !ranShell(reply) {
		t.Errorf("the signed-in console got %q; want api:console's role to run the shell", reply)
	}
}

// consoleAsk sends "run: echo shell-ran" from the console's chat box as
// client c and returns the reply.
func consoleAsk(t *testing.T, e *env, c *http.Client) string {
	t.Helper()
	_, page := get(t, c, e, "/chats/api:chat:console")
	form := url.Values{"chat": {"api:chat:console"}, "text": {"run: echo shell-ran"}}
	if resp, body := postForm(t, c, e, "/console/send", form, map[string]string{"X-CSRF-Token": csrfOf(t, page)}); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("send: %d %q", resp.StatusCode, body)
	}
	var reply string
	waitFor(t, "the console chat's reply", func() bool {
		for _, en := range e.entries("api:chat:console") {
			if en.Role == "assistant" {
				reply = en.Text
				return true
			}
		}
		return false
	})
	return reply
}
