package mcptools_test

// Background MCP calls in a real engine: the go-sdk client and the fake
// MCP server over streamable HTTP, the real jobs manager, queue and
// policy. The fake's build_wait tool holds each call until the test
// releases it, so "answers at once" is shown by the turn ending while the
// server still holds the call, never by a clock.

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakemcp"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/events"
	"github.com/shipmyagent/ship/runtime/jobs"
)

// jobScript is calls, plus: a job's result turn is answered in words
// ("job reported: …"), a plain message with "hi".
func jobScript(r fakeopenai.Request) fakeopenai.Response {
	last := r.LastUser()
	switch {
	case len(r.ToolResults()) > 0:
		return calls(r)
	case strings.HasPrefix(last, "[job "):
		return fakeopenai.Response{Content: "job reported: " + last}
	case !strings.HasPrefix(last, "call "):
		return fakeopenai.Response{Content: "hi"}
	}
	return calls(r)
}

type jobRig struct {
	*rig
	web *fakemcp.HTTP
}

// newJobRig is an engine with background jobs (at most perChat per chat)
// whose MCP server "fake" runs build_* calls in the background.
func newJobRig(t *testing.T, toolPolicy string, perChat int) *jobRig {
	t.Helper()
	web := fakemcp.StartHTTP(fakemcp.HTTPOptions{})
	t.Cleanup(web.Close)
	return newJobRigOn(t, toolPolicy, web, jobs.Options{PerChat: perChat})
}

// newJobRigOn is newJobRig with the given server and jobs.
func newJobRigOn(t *testing.T, toolPolicy string, web *fakemcp.HTTP, opts jobs.Options) *jobRig {
	t.Helper()
	m, err := jobs.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	r := buildRig(t, rigOptions{policy: toolPolicy, script: jobScript, jobs: m,
		srv: config.MCPServer{URL: web.URL, Background: []string{"build_*"}}})
	// Runs first: running jobs stop while the server is still there.
	t.Cleanup(m.Close)
	return &jobRig{rig: r, web: web}
}

// receive waits for one value of c, within the hang guard.
func receive[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(hangTime):
		t.Fatalf("waited in vain for %s", what)
		var zero T
		return zero
	}
}

// sentUntil returns the messages sent to the chat up to the first that
// contains want.
func (r *jobRig) sentUntil(want string) []string {
	r.t.Helper()
	var got []string
	for {
		m := receive(r.t, r.out.sent, "a message containing "+want)
		got = append(got, m)
		if strings.Contains(m, want) {
			return got
		}
	}
}

// jobTurns counts the model requests that carry a job's result.
func (r *jobRig) jobTurns() int {
	n := 0
	for _, q := range r.fake.Requests() {
		if strings.HasPrefix(q.LastUser(), "[job ") && len(q.ToolResults()) == 0 {
			n++
		}
	}
	return n
}

const allowFake = `{"allow": ["mcp.fake.*"]}`

func TestBackgroundMCPCallAnswersAtOnceAndItsResultComesAsOneTurn(t *testing.T) {
	r := newJobRig(t, allowFake, 3)

	o := r.ask("1", "m1", "u1", `call mcp__fake__build_wait {"name":"b1"}`)
	// The turn is over while the server still holds the call.
	if got := receive(t, r.web.Entered(), "the call to reach the server"); got != "b1" {
		t.Fatalf("the server got %q", got)
	}
	if o.Err != nil || !strings.Contains(o.Result.Output, `"job":"J1"`) || !strings.Contains(o.Result.Output, "do not wait for it or poll") {
		t.Fatalf("the tool's answer: %+v", o)
	}
	started := r.events(events.TypeJobStarted)
	if len(started) != 1 || started[0].Job == nil || started[0].Job.Tool != "mcp.fake.build_wait" ||
		started[0].Job.Label != "mcp.fake.build_wait `{\"name\":\"b1\"}`" || started[0].ChatKey != "telegram:chat:1" {
		t.Fatalf("job_started events %+v", started)
	}

	// The chat goes on meanwhile.
	o = r.ask("1", "m2", "u1", `call mcp__fake__echo {"text":"meanwhile"}`)
	if o.Err != nil || o.Result.Output != "result: meanwhile" {
		t.Fatalf("the second message got %+v", o)
	}
	if r.jobTurns() != 0 {
		t.Fatal("a job turn came before the server answered")
	}

	r.web.Release("b1", "all green")
	r.sentUntil("job reported:")
	var turn fakeopenai.Request
	for _, q := range r.fake.Requests() {
		if strings.HasPrefix(q.LastUser(), "[job ") {
			turn = q
		}
	}
	if !strings.Contains(turn.LastUser(), "[job J1 (mcp.fake.build_wait") || !strings.Contains(turn.LastUser(), "finished") ||
		!strings.Contains(turn.LastUser(), "built b1: all green") {
		t.Errorf("the result turn: %q", turn.LastUser())
	}
	finished := r.events(events.TypeJobFinished)
	if len(finished) != 1 || finished[0].Job.State != string(jobs.Done) || *finished[0].Job.ExitCode != 0 {
		t.Errorf("job_finished events %+v", finished)
	}

	// Another message is answered as usual: the result came once.
	if o = r.ask("1", "m3", "u1", "thanks"); o.Result.Output != "hi" {
		t.Errorf("the next message got %+v", o)
	}
	if n := r.jobTurns(); n != 1 {
		t.Errorf("%d turns carried the job's result, want 1", n)
	}
	if got := r.eng.Jobs("telegram:chat:1"); len(got) != 1 || got[0].State != jobs.Done {
		t.Errorf("jobs %+v", got)
	}
}

func TestCancellingABackgroundMCPCallCancelsItOnTheServer(t *testing.T) {
	r := newJobRig(t, allowFake, 3)
	r.ask("1", "m1", "u1", `call mcp__fake__build_wait {"name":"b2"}`)
	receive(t, r.web.Entered(), "the call to reach the server")

	req := dispatch.RequestContext{Channel: channel, ChatID: "1", ChatKey: "telegram:chat:1", UserID: "u1", Username: "al", MessageID: "m2", ChatType: "private"}
	if reply, ok := r.eng.Command(context.Background(), "cancel", "j1", req); !ok || reply != "" {
		t.Fatalf("/cancel: %q, %v", reply, ok)
	}
	// The server saw notifications/cancelled and its handler stopped.
	receive(t, r.web.CancelNoticed(), "notifications/cancelled at the server")
	if got := receive(t, r.web.Cancelled(), "the server's handler to be cancelled"); got != "b2" {
		t.Errorf("cancelled %q", got)
	}
	notes := r.sentUntil("was cancelled by")
	if !strings.Contains(notes[len(notes)-1], "Job J1 (mcp.fake.build_wait") {
		t.Errorf("the note: %q", notes[len(notes)-1])
	}
	finished := r.events(events.TypeJobFinished)
	if len(finished) != 1 || finished[0].Job.State != string(jobs.Cancelled) {
		t.Errorf("job_finished events %+v", finished)
	}
	// A message after the note is answered as usual, and no turn carried
	// a result.
	if o := r.ask("1", "m3", "u1", "still there?"); o.Result.Output != "hi" {
		t.Errorf("the next message got %+v", o)
	}
	if n := r.jobTurns(); n != 0 {
		t.Errorf("%d turns carried the cancelled job's result", n)
	}
}

func TestBackgroundMCPCallsAreRefusedOverTheChatLimit(t *testing.T) {
	r := newJobRig(t, allowFake, 1)
	r.ask("1", "m1", "u1", `call mcp__fake__build_wait {"name":"b3"}`)
	receive(t, r.web.Entered(), "the first call to reach the server")

	o := r.ask("1", "m2", "u1", `call mcp__fake__build_wait {"name":"b4"}`)
	if !strings.Contains(o.Result.Output, "the job was not started: too many background jobs in this chat (1 running, at most 1)") {
		t.Errorf("the second call got %q", o.Result.Output)
	}
	if got := r.eng.Jobs("telegram:chat:1"); len(got) != 1 {
		t.Errorf("jobs %+v", got)
	}
	// Another chat has its own limit.
	r.ask("2", "m3", "u1", `call mcp__fake__build_wait {"name":"b5"}`)
	if got := receive(t, r.web.Entered(), "the other chat's call"); got != "b5" {
		t.Errorf("the server got %q, want only b5 after b3 (b4 was refused)", got)
	}
}

func TestBackgroundMCPCallWaitsForApprovalBeforeItStarts(t *testing.T) {
	r := newJobRig(t, `{"allow": ["mcp.fake.*"], "requireApproval": ["mcp.fake.build_wait"], "roles": {"admin": {"members": ["telegram:boss"], "approve": true}}}`, 3)
	r.ask("1", "m1", "u1", `call mcp__fake__build_wait {"name":"b6"}`)
	code := receive(t, r.out.code, "an approval request")
	if got := r.eng.Jobs("telegram:chat:1"); len(got) != 0 {
		t.Fatalf("a job started before approval: %+v", got)
	}
	boss := dispatch.RequestContext{Channel: channel, ChatID: "1", ChatKey: "telegram:chat:1", UserID: "boss", MessageID: "m2", ChatType: "private"}
	if reply, ok := r.eng.Command(context.Background(), "approve", code, boss); !ok || reply != "" {
		t.Fatalf("approve: %q, %v", reply, ok)
	}
	if got := receive(t, r.web.Entered(), "the approved call"); got != "b6" {
		t.Errorf("the server got %q", got)
	}
	list := r.eng.Jobs("telegram:chat:1")
	if len(list) != 1 || list[0].Tool != "mcp.fake.build_wait" || list[0].Identity != "telegram:u1" {
		t.Errorf("jobs %+v (the job is the asker's)", list)
	}
	r.web.Release("b6", "ok")
	r.sentUntil("job reported:")
}

func TestBackgroundMCPCallRunningWhenShipStopsIsReportedAsInterrupted(t *testing.T) {
	web := fakemcp.StartHTTP(fakemcp.HTTPOptions{})
	t.Cleanup(web.Close)
	path := filepath.Join(t.TempDir(), "jobs.json")
	before := newJobRigOn(t, allowFake, web, jobs.Options{Path: path})
	before.ask("1", "m1", "u1", `call mcp__fake__build_wait {"name":"b7"}`)
	receive(t, web.Entered(), "the call to reach the server")
	// Ship stops with the call running: its record stays "running".
	_, _ = before.eng.Close(context.Background())

	after := newJobRigOn(t, allowFake, web, jobs.Options{Path: path})
	after.eng.Recover(context.Background())
	notes := after.sentUntil("was interrupted when ship stopped")
	if !strings.Contains(notes[len(notes)-1], "Job J1 (mcp.fake.build_wait") {
		t.Errorf("the note: %q", notes[len(notes)-1])
	}
	if got := after.eng.Jobs("telegram:chat:1"); len(got) != 1 || got[0].State != jobs.Interrupted || !got[0].Reported {
		t.Errorf("jobs after the restart %+v", got)
	}
	if n := after.jobTurns(); n != 0 {
		t.Errorf("%d turns carried a result of the interrupted call", n)
	}
}
