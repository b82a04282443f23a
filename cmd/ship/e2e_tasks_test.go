package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeopenai"
)

// writeTask writes dir/.ship/tasks/<name>.md, last changed at mod.
func writeTask(t *testing.T, dir, name, text string, mod time.Time) {
	t.Helper()
	folder := filepath.Join(dir, ".ship", "tasks")
	if err := os.MkdirAll(folder, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(folder, name+".md")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mod, mod); err != nil {
		t.Fatal(err)
	}
}

// taskStatus is one task of GET /api/tasks.
type taskStatus struct {
	Name, LastStatus, LastResult, LastRunID, Error string
}

func (p *shipProc) tasks(t *testing.T) map[string]taskStatus {
	t.Helper()
	r := p.do(t, "GET", "/api/tasks", "")
	var body struct{ Tasks []taskStatus }
	if r.status != http.StatusOK || json.Unmarshal(r.body, &body) != nil {
		t.Fatalf("GET /api/tasks: %d %s", r.status, r.body)
	}
	out := map[string]taskStatus{}
	for _, s := range body.Tasks {
		out[s.Name] = s
	}
	return out
}

// TestE2ETaskCommands is the README's Scheduled tasks section: a task file,
// ship task list, ship task run through the running ship, and the API.
func TestE2ETaskCommands(t *testing.T) {
	fake := startFake(t, nil)
	dir := initProject(t)
	writeTask(t, dir, "report", "---\ncron: \"0 9 * * *\"\ntimezone: UTC\nchatKey: api:chat:reports\n---\nWrite the report.\n", time.Now())
	writeTask(t, dir, "broken", "---\ncron: \"0 9 * * *\"\nchatKey: api:chat:reports\nenabled: sometimes\n---\nNever.\n", time.Now())
	p := startShip(t, dir, modelEnv(fake))
	cli := append(baseEnv(), "SHIP_PORT="+strings.TrimPrefix(p.url, "http://127.0.0.1:"))

	out, errOut, code := runShip(t, cli, "task", "run", "report", dir)
	if code != 0 || !strings.Contains(out, "Task report queued (run task-report-run-") {
		t.Fatalf("ship task run: exit %d\n%s%s", code, out, errOut)
	}
	eventually(t, "the run's end", func() bool { return p.tasks(t)["report"].LastStatus == "ok" })
	list := p.tasks(t)
	if list["report"].LastResult != "replied in api:chat:reports (1 message)" || !strings.Contains(list["broken"].Error, "line 4") {
		t.Errorf("GET /api/tasks = %+v", list)
	}
	out, errOut, code = runShip(t, cli, "task", "list", dir)
	if code != 1 || !strings.Contains(out, "ok: replied in api:chat:reports (1 message)") ||
		!strings.Contains(out, "broken.md is invalid and does not run") || !strings.Contains(errOut, "1 task file(s) invalid") {
		t.Errorf("ship task list: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := runShip(t, cli, "task", "run", "nope", dir); code != 1 || !strings.Contains(errOut, "no task named nope") {
		t.Errorf("running a missing task: exit %d, %s", code, errOut)
	}

	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
	if _, errOut, code := runShip(t, cli, "task", "run", "report", dir); code != 1 || !strings.Contains(errOut, "ship is not running for "+dir) {
		t.Errorf("without a running ship: exit %d, %s", code, errOut)
	}
}

// TestE2ETaskKilledMidRunIsNotPostedTwice kills ship (SIGKILL) while a
// scheduled run waits for the model. The state says the slot started and
// the journal holds the run: the next start runs it once, from the journal,
// and does not take the slot again.
func TestE2ETaskKilledMidRunIsNotPostedTwice(t *testing.T) {
	const token = "4244:e2e-tasks-token"
	tg := startTelegram(t, token)
	entered, release := make(chan struct{}, 1), make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseOnce)
	var holdOnce sync.Once
	fake := startFake(t, func(r fakeopenai.Request) fakeopenai.Response {
		if strings.Contains(r.LastUser(), "[scheduled task report]") {
			hold := false
			holdOnce.Do(func() { hold = true })
			if hold {
				entered <- struct{}{}
				<-release
			}
		}
		return fakeopenai.EchoChatSend(r)
	})
	env := modelEnv(fake, telegramEnv(tg, token)...)
	dir := initProject(t)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()

	// ship learns the chat from a message.
	p := startShip(t, dir, env)
	if err := tg.WaitPolling(ctx); err != nil {
		t.Fatal(err)
	}
	tg.Push(tg.PrivateText(77, "ann", "hi"))
	if _, err := tg.WaitSent(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit status %d", code)
	}

	// A task whose only slot this year is this minute, written before it:
	// the next start takes the slot at once (it was missed).
	slot := time.Now().UTC().Truncate(time.Minute)
	cron := fmt.Sprintf("%d %d %d %d *", slot.Minute(), slot.Hour(), slot.Day(), int(slot.Month()))
	writeTask(t, dir, "report", "---\ncron: \""+cron+"\"\ntimezone: UTC\nchatKey: telegram:chat:77\n---\nReport.\n", slot.Add(-time.Hour))
	p = startShip(t, dir, env)
	await(t, entered, "the scheduled run's model call")
	var state struct {
		Tasks map[string]struct {
			LastSlot   time.Time
			LastStatus string
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, ".ship", "tasks", "state.json"))
	if err != nil || json.Unmarshal(data, &state) != nil {
		t.Fatalf("state.json: %v %s", err, data)
	}
	if st := state.Tasks["report"]; !st.LastSlot.Equal(slot) || st.LastStatus != "started" {
		t.Fatalf("state before the kill: %s", data)
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.wait(t)
	releaseOnce()

	p = startShip(t, dir, env)
	if _, err := tg.WaitSent(ctx, 2); err != nil {
		t.Fatalf("the interrupted run was not resumed: %v", err)
	}
	eventually(t, "the scheduler's first pass", func() bool { return strings.Contains(p.stderr.String(), "scheduled tasks ready") })
	eventually(t, "an idle queue", func() bool {
		var st struct {
			Queue struct{ Waiting, Running int }
		}
		r := p.do(t, "GET", "/api/status", "")
		return json.Unmarshal(r.body, &st) == nil && st.Queue.Waiting == 0 && st.Queue.Running == 0
	})
	posts, starts := 0, 0
	for _, s := range tg.Sent() {
		if strings.Contains(s.Text, "[scheduled task report]") {
			posts++
		}
	}
	for _, r := range fake.Requests() {
		if strings.Contains(r.LastUser(), "[scheduled task report]") && len(r.ToolResults()) == 0 {
			starts++
		}
	}
	if posts != 1 || starts != 2 {
		t.Errorf("the slot was posted %d times and started %d times; want 1 post (started twice: killed, then resumed)", posts, starts)
	}
	if st := p.tasks(t)["report"]; st.LastStatus != "interrupted" {
		t.Errorf("after the restart: %+v", st)
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
}
