package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/events"
	"github.com/shipmyagent/ship/runtime/jobs"
)

// jobsPolicy: u1 may run the waiting scripts of these tests, never rm.
const jobsPolicy = `{
  "deny": ["exec_shell(rm *)"],
  "roles": {"dev": {"members": ["telegram:u1"], "allow": ["exec_shell(sh wait.sh)", "exec_shell(rm *)"]}}
}`

// waitScript runs wait.sh, which waits until the file go appears in the
// project folder: the test, not a clock, decides when the job ends.
const waitScript = "sh wait.sh"

func openJobs(t *testing.T, dir string) *jobs.Manager {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "wait.sh"), []byte("until [ -e go ]; do sleep 0.05; done; echo built\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := jobs.Open(jobs.Options{Path: filepath.Join(dir, ".ship", "jobs.json")})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// waitText waits (bounded) until the chat got a message containing want,
// and returns how many did.
func (h *harness) waitText(chatKey, want string) int {
	h.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if n := countContaining(h.out.texts(chatKey), want); n > 0 {
			return n
		}
	}
	h.t.Fatalf("the chat never got %q; it got %q", want, h.out.texts(chatKey))
	return 0
}

func countContaining(texts []string, want string) int {
	n := 0
	for _, s := range texts {
		if strings.Contains(s, want) {
			n++
		}
	}
	return n
}

func TestBackgroundJobResultComesBackAsOneNewTurn(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, harnessOptions{dir: dir, handler: fakeopenai.RunCommands, exec: true, policy: jobsPolicy, jobs: openJobs(t, dir)})
	sub, _ := h.engine.Subscribe(func(e events.Event) bool {
		return e.Type == events.TypeJobStarted || e.Type == events.TypeJobFinished
	}, 0, 16)
	defer sub.Close()
	key := chatKeyOf("1")

	if o := h.ask("1", "m1", "bg: "+waitScript); o.Err != nil {
		t.Fatal(o.Err)
	}
	if got := h.out.texts(key); len(got) != 1 || !strings.Contains(got[0], `"job":"J1"`) {
		t.Fatalf("the tool did not answer with a job id: %q", got)
	}
	// The chat goes on while the job runs.
	if o := h.ask("1", "m2", "hello"); o.Err != nil {
		t.Fatal(o.Err)
	}
	if h.waitText(key, "echo: hello") != 1 {
		t.Fatal("the second message was not answered once")
	}
	reply, _ := h.engine.Command(context.Background(), "jobs", "", dispatch.RequestContext{ChatKey: key, Channel: testChannel, ChatID: "1"})
	if !strings.Contains(reply, "J1 running") {
		t.Errorf("/jobs = %q, want J1 running", reply)
	}

	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h.waitText(key, "[job J1 (exec_shell `"+waitScript+"`) finished")
	h.waitIdle()
	if n := countContaining(h.out.texts(key), "[job J1"); n != 1 {
		t.Errorf("the result came back %d times, want once: %q", n, h.out.texts(key))
	}
	if got := h.out.texts(key); !strings.Contains(got[len(got)-1], "exit 0") || !strings.Contains(got[len(got)-1], "built") {
		t.Errorf("the new turn did not carry the result: %q", got[len(got)-1])
	}
	for _, want := range []string{events.TypeJobStarted, events.TypeJobFinished} {
		select {
		case e := <-sub.C:
			if e.Type != want || e.ChatKey != key || e.Job == nil || e.Job.JobID != "J1" {
				t.Fatalf("event %+v, want %s of J1", e, want)
			}
			if want == events.TypeJobFinished && (e.Job.State != "done" || e.Job.ExitCode == nil || *e.Job.ExitCode != 0) {
				t.Errorf("job_finished = %+v", e.Job)
			}
		case <-time.After(10 * time.Second): // hang guard
			t.Fatalf("no %s event", want)
		}
	}
}

func TestBackgroundCallIsGovernedLikeAForegroundOne(t *testing.T) {
	dir := t.TempDir()
	m := openJobs(t, dir)
	h := newHarness(t, harnessOptions{dir: dir, handler: fakeopenai.RunCommands, exec: true, policy: jobsPolicy, jobs: m})
	h.ask("1", "m1", "bg: rm -rf "+filepath.Join(dir, ".ship"))
	if got := strings.Join(h.out.texts(chatKeyOf("1")), "\n"); !strings.Contains(got, "refused by the tool policy") {
		t.Errorf("the model was told %q; want a refusal", got)
	}
	if list := m.List(""); len(list) != 0 {
		t.Errorf("a refused call started a job: %+v", list)
	}
}

func TestCancelledJobTellsTheChatAndBringsNoResult(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, harnessOptions{dir: dir, handler: fakeopenai.RunCommands, exec: true, policy: jobsPolicy, jobs: openJobs(t, dir)})
	key := chatKeyOf("1")
	h.ask("1", "m1", "bg: "+waitScript)
	req := dispatch.RequestContext{ChatKey: key, Channel: testChannel, ChatID: "1", UserID: "u1", Username: "alice"}
	if reply, _ := h.engine.Command(context.Background(), "cancel", "J9", req); !strings.Contains(reply, "no job J9") {
		t.Errorf("/cancel J9 = %q", reply)
	}
	other := req
	other.UserID, other.Username = "u2", "mallory"
	if reply, _ := h.engine.Command(context.Background(), "cancel", "j1", other); !strings.Contains(reply, "Only whoever started job J1, or an approver") {
		t.Errorf("/cancel j1 by another member without a role = %q, want a refusal", reply)
	}
	// The api chats' path (ship chat, /api/execute) holds the same rule
	// for the identity a token proves.
	if reply, _ := h.engine.JobsCommand("cancel", "j1", key, "api:mallory"); !strings.Contains(reply, "Only whoever started job J1, or an approver") {
		t.Errorf("/cancel j1 by another token's identity = %q, want a refusal", reply)
	}
	if reply, _ := h.engine.JobsCommand("jobs", "", key, "api:mallory"); !strings.Contains(reply, "J1 running") {
		t.Errorf("/jobs = %q", reply)
	}
	if reply, _ := h.engine.Command(context.Background(), "cancel", "j1", req); reply != "" {
		t.Errorf("/cancel j1 = %q, want no reply (the note follows)", reply)
	}
	h.waitText(key, "Job J1 (exec_shell `"+waitScript+"`) was cancelled by alice")
	h.waitIdle()
	if n := countContaining(h.out.texts(key), "[job J1"); n != 0 {
		t.Errorf("a cancelled job's result came back: %q", h.out.texts(key))
	}
}

func TestJobRunningWhenShipStopsIsReportedOnceAfterRestart(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, harnessOptions{dir: dir, handler: fakeopenai.RunCommands, exec: true, policy: jobsPolicy, jobs: openJobs(t, dir)})
	h.ask("1", "m1", "bg: "+waitScript)
	h.close() // ship stops with the job running

	const note = "Job J1 (exec_shell `" + waitScript + "`) was interrupted when ship stopped; it did not finish. Ask again to run it."
	for restart := 1; restart <= 2; restart++ {
		h2 := newHarness(t, harnessOptions{dir: dir, handler: fakeopenai.RunCommands, exec: true, policy: jobsPolicy, jobs: openJobs(t, dir)})
		h2.engine.Recover(context.Background())
		if restart == 1 {
			h2.waitText(chatKeyOf("1"), note)
		}
		h2.close() // waits for the note being sent
		if n := countContaining(h2.out.texts(chatKeyOf("1")), "interrupted"); n != 2-restart {
			t.Errorf("restart %d: told %d times (%q)", restart, n, h2.out.texts(chatKeyOf("1")))
		}
	}
}

// TestAnotherMemberCannotCancelAJobByDisguisingItsID tries to slip a job id
// past the starter-or-approver check: an id with a tab, a no-break space or
// another Unicode space after it, or in lower case, names the same job to the
// job manager, so each must be refused like the plain id, on a platform chat
// and on the api chats' path alike.
func TestAnotherMemberCannotCancelAJobByDisguisingItsID(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, harnessOptions{dir: dir, handler: fakeopenai.RunCommands, exec: true, policy: jobsPolicy, jobs: openJobs(t, dir)})
	key := chatKeyOf("1")
	h.ask("1", "m1", "bg: "+waitScript)
	other := dispatch.RequestContext{ChatKey: key, Channel: testChannel, ChatID: "1", UserID: "u2", Username: "mallory"}
	for _, args := range []string{"J1\t x", "j1\u00a0 x", "J1\u2003 x", "\u00a0J1", "j1\n x", "J1\u3000"} {
		if reply, _ := h.engine.Command(context.Background(), "cancel", args, other); !strings.Contains(reply, "Only whoever started job J1, or an approver") {
			t.Errorf("/cancel %q by another member = %q, want a refusal", args, reply)
		}
		if reply, _ := h.engine.JobsCommand("cancel", args, key, "api:mallory"); !strings.Contains(reply, "Only whoever started job J1, or an approver") {
			t.Errorf("/cancel %q by another token's identity = %q, want a refusal", args, reply)
		}
	}
	if list := h.engine.Jobs(key); len(list) != 1 || list[0].State != jobs.Running {
		t.Fatalf("after the disguised /cancel: %+v; want J1 still running", list)
	}
	req := other
	req.UserID, req.Username = "u1", "alice"
	if reply, _ := h.engine.Command(context.Background(), "cancel", "j1\t", req); reply != "" {
		t.Errorf("the starter's /cancel = %q, want no reply (the note follows)", reply)
	}
	h.waitText(key, "Job J1 (exec_shell `"+waitScript+"`) was cancelled by alice")
	h.waitIdle()
}
