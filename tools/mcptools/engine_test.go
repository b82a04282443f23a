package mcptools_test

// MCP tools in a real engine: langchaingo's OpenAI client talking to the
// loopback fake model, the real queue, runtime, tool policy and chat log,
// and the fake MCP server over streamable HTTP.

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/shipmyagent/ship/internal/fakemcp"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/events"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/jobs"
	"github.com/shipmyagent/ship/runtime/mcp"
	"github.com/shipmyagent/ship/runtime/policy"
	"github.com/shipmyagent/ship/runtime/queue"
	"github.com/shipmyagent/ship/tools"
	"github.com/shipmyagent/ship/tools/mcptools"
)

const (
	channel  = "telegram"
	hangTime = 30 * time.Second // a hang guard, never a timing assertion
)

// calls scripts the model: each user message names a function to call
// with its arguments ("call mcp__fake__echo {...}"); once the result is
// in, the model repeats it as its answer.
func calls(r fakeopenai.Request) fakeopenai.Response {
	if res := r.ToolResults(); len(res) > 0 {
		return fakeopenai.Response{Content: "result: " + res[len(res)-1].Content}
	}
	name, args, _ := strings.Cut(strings.TrimPrefix(r.LastUser(), "call "), " ")
	return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: name, Arguments: args}}}
}

type outbox struct {
	mu   sync.Mutex
	msgs []string
	code chan string // approval codes, from the Approve buttons
	sent chan string // every message sent, for tests that wait for one
}

func (o *outbox) SendText(_ context.Context, _ dispatch.RequestContext, text string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.msgs = append(o.msgs, text)
	select {
	case o.sent <- text:
	default: // a test that does not read them
	}
	return nil
}

func (o *outbox) SendButtons(ctx context.Context, req dispatch.RequestContext, text string, buttons []dispatch.Button) error {
	for _, b := range buttons {
		if code, ok := strings.CutPrefix(b.Data, "/approve "); ok {
			o.code <- code
		}
	}
	return o.SendText(ctx, req, text)
}

type rig struct {
	t    *testing.T
	fake *fakeopenai.Server
	eng  *engine.Engine
	out  *outbox
	sub  *events.Subscription
}

// newRig is an engine whose MCP server "fake" is the fake over
// streamable HTTP.
func newRig(t *testing.T, toolPolicy string) *rig {
	t.Helper()
	web := fakemcp.StartHTTP(fakemcp.HTTPOptions{})
	t.Cleanup(web.Close)
	return newRigWith(t, toolPolicy, config.MCPServer{URL: web.URL})
}

// newRigWith is an engine whose MCP server "fake" is srv.
func newRigWith(t *testing.T, toolPolicy string, srv config.MCPServer) *rig {
	t.Helper()
	return buildRig(t, rigOptions{policy: toolPolicy, srv: srv, script: calls})
}

// rigOptions are what buildRig varies.
type rigOptions struct {
	policy string
	srv    config.MCPServer
	script fakeopenai.Handler
	// jobs, when set, runs background jobs: those of the calls that
	// srv.Background names.
	jobs *jobs.Manager
}

func buildRig(t *testing.T, o rigOptions) *rig {
	t.Helper()
	toolPolicy, srv := o.policy, o.srv
	r := &rig{t: t, out: &outbox{code: make(chan string, 4), sent: make(chan string, 64)}}
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)

	m := mcp.New(mcp.Options{Servers: map[string]config.MCPServer{"fake": srv}, Dir: t.TempDir(), Logger: log})
	m.Start(context.Background())
	t.Cleanup(m.Close)
	deadline := time.After(hangTime)
	for {
		changed := m.Changed()
		if len(m.Tools()) > 0 {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the fake MCP server never got ready: %+v", m.Status())
		}
	}

	fake, err := fakeopenai.Start(o.script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	r.fake = fake
	model, err := openai.New(openai.WithBaseURL(fake.BaseURL()), openai.WithToken("test-key"), openai.WithModel("fake-model"))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse(json.RawMessage(toolPolicy))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	eng, err := engine.New(engine.Options{
		Tools: tools.Default,
		Toolboxes: []agent.Toolbox{mcptools.NewWith(m, log, mcptools.Options{
			Jobs: o.jobs, Background: config.MCPConfig{Servers: map[string]config.MCPServer{"fake": srv}}.RunsInBackground,
		})},
		Jobs:          o.jobs,
		Policy:        func() *policy.Policy { return pol },
		ApprovalsPath: filepath.Join(dir, "approvals.json"),
		ChatsDir:      filepath.Join(dir, "chats"),
		Durability:    chat.DurabilityNone,
		Model:         model,
		Queue:         queue.Options{},
		Logger:        log,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = eng.Close(context.Background()) })
	eng.Register(channel, r.out)
	r.eng = eng
	r.sub, _ = eng.Subscribe(nil, 0, 1024)
	return r
}

func (r *rig) ask(chatID, msgID, userID, text string) ingress.Outcome {
	r.t.Helper()
	done := make(chan ingress.Outcome, 1)
	_, err := r.eng.Submit(context.Background(), ingress.Submission{
		Channel: channel, ChatKey: "telegram:chat:" + chatID,
		Message: ingress.IncomingChatMessage{ChatID: chatID, Text: text, MessageID: msgID, UserID: userID, ChatType: "private"},
		OnDone:  func(o ingress.Outcome) { done <- o },
	})
	if err != nil {
		r.t.Fatalf("accepting %q: %v", text, err)
	}
	select {
	case o := <-done:
		return o
	case <-time.After(hangTime):
		r.t.Fatalf("no outcome for %q", text)
		return ingress.Outcome{}
	}
}

// events returns what the bus carried so far of the given types.
func (r *rig) events(types ...string) []events.Event {
	var out []events.Event
	for {
		select {
		case e := <-r.sub.C:
			for _, ty := range types {
				if e.Type == ty {
					out = append(out, e)
				}
			}
		default:
			return out
		}
	}
}

func (r *rig) toolEntries(chatKey string) []chat.ChatLogEntryV1 {
	var out []chat.ChatLogEntryV1
	err := r.eng.Scan(context.Background(), chatKey, func(e chat.ChatLogEntryV1) bool {
		if e.Role == chat.RoleTool {
			out = append(out, e)
		}
		return true
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

func TestModelSeesAllowedMCPToolsWithTheirSchemaAndCallsThem(t *testing.T) {
	r := newRig(t, `{"allow": ["mcp.fake.*"], "deny": ["mcp.fake.add"]}`)
	o := r.ask("1", "m1", "u1", `call mcp__fake__echo {"text":"hello from mcp"}`)
	if o.Err != nil || !o.Result.Success {
		t.Fatalf("outcome %+v", o)
	}

	reqs := r.fake.Requests()
	first := reqs[0]
	var echo *fakeopenai.Tool
	for i, tl := range first.Tools {
		if tl.Name == "mcp__fake__echo" {
			echo = &first.Tools[i]
		}
	}
	if echo == nil {
		t.Fatalf("echo not offered; tools %+v", first.Tools)
	}
	var schema struct {
		Type       string
		Properties map[string]struct{ Type, Description string }
		Required   []string
	}
	if err := json.Unmarshal(echo.Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	if echo.Description != "Echo the text back." || schema.Type != "object" ||
		schema.Properties["text"] != (struct{ Type, Description string }{"string", "the text to echo back"}) || len(schema.Required) != 1 {
		t.Errorf("echo as offered: %s %s", echo.Description, echo.Parameters)
	}
	if first.HasTool("mcp__fake__add") || !first.HasTool("mcp__fake__slow") || !first.HasTool("chat_send") {
		t.Errorf("offered %v: want add hidden (denied), slow and chat_send offered", names(first.Tools))
	}

	// The result reached the model; operators see the policy name.
	if got := reqs[1].ToolResults(); len(got) != 1 || got[0].Content != "hello from mcp" {
		t.Errorf("the model got %+v", got)
	}
	if len(o.Result.ToolCalls) != 1 || o.Result.ToolCalls[0].Tool != "mcp.fake.echo" || o.Result.ToolCalls[0].Output != "hello from mcp" {
		t.Errorf("tool calls %+v", o.Result.ToolCalls)
	}
	evs := r.events(events.TypeToolCall, events.TypeToolResult)
	if len(evs) != 2 || evs[0].Tool != "mcp.fake.echo" || evs[1].Tool != "mcp.fake.echo" {
		t.Errorf("events %+v", evs)
	}
	logged := r.toolEntries("telegram:chat:1")
	if len(logged) != 1 || logged[0].Meta["tool"] != "mcp.fake.echo" || logged[0].Meta["outcome"] != "ok" {
		t.Errorf("chat log %+v", logged)
	}

	// A call of the denied tool (a model may guess its name) is refused
	// by the rule that names it.
	o = r.ask("1", "m2", "u1", `call mcp__fake__add {"a":1,"b":2}`)
	rejected := r.events(events.TypePolicyRejected)
	if len(rejected) != 1 || rejected[0].Tool != "mcp.fake.add" || !strings.Contains(rejected[0].Reason, `"mcp.fake.add"`) {
		t.Errorf("policy_rejected events %+v", rejected)
	}
	if strings.Contains(o.Result.Output, "3") {
		t.Errorf("the denied tool ran: %q", o.Result.Output)
	}

	// /api/tools reports the policy names.
	rep := r.eng.Tools("telegram:chat:1", "telegram:u1", "")
	found := map[string]engine.ToolInfo{}
	for _, ti := range rep.Tools {
		found[ti.Name] = ti
	}
	if ti := found["mcp.fake.echo"]; !ti.Offered || ti.ModelName != "mcp__fake__echo" {
		t.Errorf("report of echo %+v", ti)
	}
	if ti := found["mcp.fake.add"]; ti.Offered || ti.Decision == nil || ti.Decision.Verdict != policy.Deny {
		t.Errorf("report of add %+v", ti)
	}
}

func TestMCPToolsAreDeniedByDefault(t *testing.T) {
	r := newRig(t, `{}`)
	r.ask("1", "m1", "u1", "call chat_send {\"text\":\"hi\"}")
	for _, tl := range r.fake.Requests()[0].Tools {
		if strings.HasPrefix(tl.Name, "mcp__") {
			t.Errorf("offered %s without a rule that allows it", tl.Name)
		}
	}
}

func TestApprovedMCPCallRunsUnderItsFunctionName(t *testing.T) {
	r := newRig(t, `{"allow": ["mcp.fake.*"], "requireApproval": ["mcp.fake.echo"], "roles": {"admin": {"members": ["telegram:boss"], "approve": true}}}`)
	r.ask("1", "m1", "u1", `call mcp__fake__echo {"text":"approved text"}`)
	var code string
	select {
	case code = <-r.out.code:
	case <-time.After(hangTime):
		t.Fatal("no approval was asked")
	}
	asked := r.events(events.TypeApprovalRequired)
	if len(asked) != 1 || asked[0].Tool != "mcp.fake.echo" {
		t.Errorf("approval_required events %+v", asked)
	}
	before := len(r.fake.Requests())

	boss := dispatch.RequestContext{Channel: channel, ChatID: "1", ChatKey: "telegram:chat:1", UserID: "boss", MessageID: "m2", ChatType: "private"}
	if reply, ok := r.eng.Command(context.Background(), "approve", code, boss); !ok || reply != "" {
		t.Fatalf("approve: %q, %v", reply, ok)
	}
	// The approved turn runs the call, then asks the model to go on: its
	// history must carry the call under the name the model knows.
	deadline := time.After(hangTime)
	for len(r.fake.Requests()) == before {
		select {
		case <-deadline:
			t.Fatal("the approved turn never reached the model")
		case <-r.sub.C: // wait for the turn's events
		}
	}
	last := r.fake.Requests()[before]
	var called []string
	for _, m := range last.Messages {
		for _, c := range m.ToolCalls {
			called = append(called, c.Name)
		}
	}
	if res := last.ToolResults(); len(res) != 1 || res[0].Content != "approved text" {
		t.Errorf("the model got %+v after approval", res)
	}
	if strings.Join(called, ",") != "mcp__fake__echo,mcp__fake__echo" {
		t.Errorf("tool calls in the history: %v", called)
	}
}

func names(ts []fakeopenai.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}
