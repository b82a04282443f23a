package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/events"
	"github.com/shipmyagent/ship/runtime/jobs"
)

// loopingSubAgent is subAgentModel, except that a sub-agent whose brief
// starts with "busy" never finishes: each answer says which step it is on
// and runs echo again, costing 100 + 10 tokens; and one whose brief starts
// with "loop:" hands its own brief (shouted, respaced) to a new sub-agent.
func loopingSubAgent(r fakeopenai.Request) fakeopenai.Response {
	brief := ""
	for _, m := range r.Messages {
		if m.Role == "user" {
			brief = m.Content
		}
	}
	if r.HasTool("chat_send") {
		return subAgentModel(r)
	}
	switch {
	case strings.HasPrefix(brief, "busy"):
		step := len(r.ToolResults()) + 1
		return fakeopenai.Response{Content: fmt.Sprintf("still working, step %d", step), PromptTokens: 100, CompletionTokens: 10,
			ToolCalls: []fakeopenai.ToolCall{{Name: "exec_shell", Arguments: `{"command":"echo hi"}`}}}
	case strings.HasPrefix(brief, "loop:") && len(r.ToolResults()) == 0:
		again := "  " + strings.ToUpper(strings.Join(strings.Fields(brief), "   ")) + "\n"
		b, _ := json.Marshal(map[string]string{"brief": again}) // a string map always encodes
		return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: engine.SubAgentTool, Arguments: string(b)}}}
	}
	return subAgentModel(r)
}

func TestSubAgentStopsWhenItsStepBudgetRunsOut(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, harnessOptions{dir: dir, handler: loopingSubAgent, exec: true, policy: subAgentPolicy,
		jobs: openJobs(t, dir), subAgents: &engine.SubAgentOptions{MaxSteps: 2}})
	key := chatKeyOf("1")
	// It asks for more than the operator allows: it gets the operator's 2.
	if o := h.ask("1", "m1", spawnText(t, map[string]any{"brief": "busy with a side task", "maxSteps": 100})); o.Err != nil {
		t.Fatal(o.Err)
	}
	h.waitText(key, "got: [sub-agent J1")
	got := strings.Join(h.out.texts(key), "\n")
	for _, want := range []string{"failed: stopped: the sub-agent's budget of 2 model calls ran out before it finished.",
		"[partial output, unfinished]\nstill working, step 2\n[end of partial output]"} {
		if !strings.Contains(got, want) {
			t.Fatalf("the parent chat got %q, want %q", got, want)
		}
	}
	if j := h.engine.Jobs(key)[0]; j.State != jobs.Failed {
		t.Fatalf("a sub-agent stopped by its budget ended %s, want failed", j.State)
	}
}

func TestSubAgentStopsWhenItsTokenBudgetRunsOut(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, harnessOptions{dir: dir, handler: loopingSubAgent, exec: true, policy: subAgentPolicy,
		jobs: openJobs(t, dir), subAgents: &engine.SubAgentOptions{}})
	key := chatKeyOf("1")
	sub, _ := h.engine.Subscribe(func(e events.Event) bool {
		return e.Type == events.TypeDispatchCompleted && e.Dispatch != nil && e.Dispatch.JobID == "J1"
	}, 0, 4)
	defer sub.Close()
	// 110 tokens a call: the second call crosses 200, no third is made.
	if o := h.ask("1", "m1", spawnText(t, map[string]any{"brief": "busy with a side task", "maxTokens": 200})); o.Err != nil {
		t.Fatal(o.Err)
	}
	h.waitText(key, "got: [sub-agent J1")
	if got := strings.Join(h.out.texts(key), "\n"); !strings.Contains(got, "budget of 200 tokens ran out") || !strings.Contains(got, "still working, step 2\n") {
		t.Fatalf("the parent chat got %q, want the token budget named and step 2's partial output", got)
	}
	select {
	case e := <-sub.C:
		if d := e.Dispatch; d.Outcome != "failed" || d.Budget != "tokens" || d.Tokens != 220 || d.ToolCalls != 2 {
			t.Fatalf("dispatch_completed of the sub-agent = %+v, want failed by its token budget after 220 tokens and 2 calls", d)
		}
	case <-time.After(10 * time.Second): // hang guard
		t.Fatal("no dispatch_completed for the sub-agent")
	}
}

func TestSubAgentBudgetMustBePositive(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, harnessOptions{dir: dir, handler: loopingSubAgent, exec: true, policy: subAgentPolicy,
		jobs: openJobs(t, dir), subAgents: &engine.SubAgentOptions{}})
	key := chatKeyOf("1")
	h.ask("1", "m1", spawnText(t, map[string]any{"brief": "hello", "maxSteps": -1}))
	if got := strings.Join(h.out.texts(key), "\n"); !strings.Contains(got, "maxSteps and maxTokens must be positive") {
		t.Fatalf("a negative budget: %q", got)
	}
	if n := len(h.engine.Jobs(key)); n != 0 {
		t.Fatalf("a refused spawn started %d jobs", n)
	}
}

// TestSubAgentHandingItsOwnBriefDownIsALoop: the brief is compared with
// whitespace collapsed and case folded.
func TestSubAgentHandingItsOwnBriefDownIsALoop(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, harnessOptions{dir: dir, handler: loopingSubAgent, exec: true, policy: subAgentPolicy,
		jobs: openJobs(t, dir), subAgents: &engine.SubAgentOptions{}})
	key := chatKeyOf("1")
	if o := h.ask("1", "m1", spawnText(t, map[string]any{"brief": "loop: check the  build"})); o.Err != nil {
		t.Fatal(o.Err)
	}
	h.waitText(key, "got: [sub-agent J1")
	got := strings.Join(h.out.texts(key), "\n")
	if !strings.Contains(got, "refused: this brief is the same as that of sub-agent J1, which this one descends from: a loop") {
		t.Fatalf("a sub-agent handing down its own brief was not refused as a loop: %q", got)
	}
	if n := len(h.engine.Jobs(key)); n != 1 {
		t.Fatalf("%d jobs, want only J1", n)
	}
}

// TestSubAgentHoldsALeaseAndIsReclaimedWhenItExpires: the lease is on the
// job, /jobs and the events; past its TTL the sub-agent's command is
// killed and the job ends failed with its lease expired.
func TestSubAgentHoldsALeaseAndIsReclaimedWhenItExpires(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, harnessOptions{dir: dir, handler: subAgentModel, exec: true,
		policy: `{"allow": ["agent_spawn", "exec_shell(sleep *)"]}`, jobs: openJobs(t, dir), subAgents: &engine.SubAgentOptions{}})
	key := chatKeyOf("1")
	sub, _ := h.engine.Subscribe(func(e events.Event) bool {
		switch e.Type {
		case events.TypeJobStarted, events.TypeJobFinished, events.TypeDispatchStarted, events.TypeSessionCreated, events.TypeDispatchCompleted:
			return e.Job != nil || (e.Dispatch != nil && e.Dispatch.JobID != "") || (e.Session != nil && e.Session.JobID != "")
		}
		return false
	}, 0, 16)
	defer sub.Close()
	first := h.ask("1", "m1", spawnText(t, map[string]any{"brief": "run: sleep 30", "timeoutSeconds": 0.5}))
	if first.Err != nil {
		t.Fatal(first.Err)
	}
	h.waitText(key, "got: [sub-agent J1")
	j := h.engine.Jobs(key)[0]
	if j.Lease == nil || !j.Lease.Expired || j.Lease.TTLMS != 500 || j.State != jobs.Failed {
		t.Fatalf("the sub-agent's job is %s with lease %+v, want failed with its 500 ms lease expired", j.State, j.Lease)
	}
	reply, _ := h.engine.Command(context.Background(), "jobs", "", dispatch.RequestContext{ChatKey: key, Channel: testChannel, ChatID: "1"})
	if !strings.Contains(reply, "J1 failed") || !strings.Contains(reply, "lease "+j.Lease.ID+" expired") {
		t.Errorf("/jobs = %q, want J1 failed with its lease expired", reply)
	}
	var seen []string
	for len(seen) < 5 {
		select {
		case e := <-sub.C:
			seen = append(seen, e.Type)
			switch {
			case e.Job != nil && e.Job.LeaseID != j.Lease.ID:
				t.Errorf("%s names lease %q, want %s", e.Type, e.Job.LeaseID, j.Lease.ID)
			case e.Type == events.TypeJobFinished && !e.Job.LeaseExpired:
				t.Errorf("job_finished does not say the lease expired: %+v", e.Job)
			case e.Type == events.TypeDispatchStarted && (e.Dispatch.LeaseID != j.Lease.ID || e.Dispatch.Depth != 1 || e.Dispatch.ParentRequestID == "" || e.Dispatch.Agent != "sub-agent"):
				t.Errorf("dispatch_started = %+v", e.Dispatch)
			case e.Type == events.TypeDispatchCompleted && e.Dispatch.Outcome != "timeout":
				t.Errorf("dispatch_completed = %+v, want outcome timeout", e.Dispatch)
			}
		case <-time.After(10 * time.Second): // hang guard
			t.Fatalf("sub-agent events so far: %v", seen)
		}
	}
	want := []string{events.TypeJobStarted, events.TypeDispatchStarted, events.TypeSessionCreated, events.TypeDispatchCompleted, events.TypeJobFinished}
	if strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Errorf("sub-agent events %v, want %v", seen, want)
	}
}
