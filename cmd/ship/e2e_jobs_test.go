package main_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/faketelegram"
)

// jobsTools lets alice run the job script; the sandbox is off so that the
// script's pid is one the test can look up (a sandbox has its own pids).
const jobsTools = `{
  "exec": {"enabled": true, "sandbox": "off"},
  "jobs": {"perChat": 2},
  "roles": {"dev": {"members": ["telegram:1001"], "allow": ["exec_shell(sh job.sh *)"]}}
}`

// jobScript records its pid, then waits until the file named by its
// argument appears: the test decides when it ends, no clock does.
const jobScript = `echo $$ > "$1.pid"; until [ -e "$1.go" ]; do sleep 0.1; done; echo "built $1"`

// TestE2EBackgroundJobInATelegramTopic runs background exec_shell jobs
// through the real binary and the Telegram fake: the tool answers at once,
// the topic is served while the job runs, the result comes back once as a
// reply in the topic; /cancel kills a job's process; a job running when
// ship is killed with SIGKILL dies with it and is reported as interrupted
// once after the restart.
func TestE2EBackgroundJobInATelegramTopic(t *testing.T) {
	const token = "4242:e2e-jobs-token"
	const group, topic = int64(-100777), int64(9)
	tg := startTelegram(t, token)
	fake := startFake(t, fakeopenai.RunCommands)
	dir := initProject(t)
	setTools(t, dir, jobsTools)
	if err := os.WriteFile(filepath.Join(dir, "job.sh"), []byte(jobScript+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A job left running by the SIGKILL below ends with the test.
	t.Cleanup(func() {
		for _, name := range []string{"a", "b", "c"} {
			_ = os.WriteFile(filepath.Join(dir, name+".go"), nil, 0o600)
		}
	})
	env := modelEnv(fake, telegramEnv(tg, token)...)
	p := startShip(t, dir, env)
	sse := sseLines(t, p)

	ctx, cancel := context.WithTimeout(context.Background(), 4*hangGuard)
	defer cancel()
	inTopic := func(s faketelegram.Sent) bool { return s.ChatID == group && s.ThreadID == topic }
	count := func(want string) int {
		n := 0
		for _, s := range tg.Shown() {
			if inTopic(s) && strings.Contains(s.Text, want) {
				n++
			}
		}
		return n
	}
	waitFor := func(what, want string) {
		t.Helper()
		if err := tg.Wait(ctx, func() bool { return count(want) > 0 }); err != nil {
			t.Fatalf("waiting for %s: %v; sent: %+v", what, err, tg.Shown())
		}
	}
	say := func(text string) int64 {
		m := tg.TopicText(group, topic, 1001, "alice", text)
		tg.Push(m)
		id, _ := m["message"].(map[string]any)["message_id"].(int64)
		return id
	}

	// Job a: the tool answers at once with a job id.
	askA := say(tg.Mention() + " bg: sh job.sh a")
	waitFor("the job id", `"job":"J1"`)
	pidA := readJobPID(t, dir, "a")
	// The topic is served while the job runs.
	asked := time.Now()
	say(tg.Mention() + " hello meanwhile")
	waitFor("the answer while the job runs", "echo: hello meanwhile")
	t.Logf("measured: a message in the topic answered %s after it was sent, while job J1 ran", time.Since(asked).Round(time.Millisecond))

	if err := os.WriteFile(filepath.Join(dir, "a.go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor("the job's result", "[job J1 (exec_shell sh job.sh a) finished")
	var result faketelegram.Sent
	for _, s := range tg.Shown() {
		if inTopic(s) && strings.Contains(s.Text, "[job J1") {
			result = s
		}
	}
	if !strings.Contains(result.Text, "built a") || result.ReplyTo != askA {
		t.Errorf("result %+v: want the output, replying to the message that asked (%d)", result, askA)
	}
	processGone(t, pidA)
	// /api/sse told of the job's start and end.
	for _, want := range [][]string{
		{`"type":"job_started"`, `"jobId":"J1"`, `"chatKey":"telegram:chat:-100777:topic:9"`},
		{`"type":"job_finished"`, `"jobId":"J1"`, `"state":"done"`, `"exitCode":0`, `"durationMs":`},
	} {
		eventually(t, "the event "+want[0]+" on /api/sse", func() bool {
			for _, line := range sse() {
				if containsAll(line, want) {
					return true
				}
			}
			return false
		})
	}

	// Job b is cancelled: its process is killed, the topic is told, and
	// no result follows.
	say(tg.Mention() + " bg: sh job.sh b")
	waitFor("job b's id", `"job":"J2"`)
	pidB := readJobPID(t, dir, "b")
	say("/jobs")
	waitFor("the job list", "J2 running for")
	say("/cancel J2")
	waitFor("the cancel note", "Job J2 (exec_shell sh job.sh b) was cancelled by alice")
	processGone(t, pidB)

	// Job c runs when ship is killed: after the restart the topic is told
	// it was interrupted, once (a second restart says nothing more).
	say(tg.Mention() + " bg: sh job.sh c")
	waitFor("job c's id", `"job":"J3"`)
	pidC := readJobPID(t, dir, "c")
	p.stop(t, syscall.SIGKILL)
	// Nobody is left to kill it at its timeout: its watchdog kills it
	// now, so the command does not outlive ship.
	processGone(t, pidC)
	p = startShip(t, dir, env)
	// The chat shows the command as code: the backticks are gone.
	const note = "Job J3 (exec_shell sh job.sh c) was interrupted when ship stopped; it did not finish. Ask again to run it."
	waitFor("the interrupted note", note)
	p.stop(t, syscall.SIGTERM)
	p = startShip(t, dir, env)
	say(tg.Mention() + " after the second restart")
	waitFor("the answer after the second restart", "echo: after the second restart")
	for want, n := range map[string]int{note: 1, "[job J1": 1, "[job J2": 0, "[job J3": 0} {
		if got := count(want); got != n {
			t.Errorf("%q shown %d times, want %d", want, got, n)
		}
	}
	p.stop(t, syscall.SIGTERM)
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// readJobPID waits (bounded) for job name's script to have written its pid.
func readJobPID(t *testing.T, dir, name string) int {
	t.Helper()
	var pid int
	eventually(t, "job "+name+"'s pid", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, name+".pid"))
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	return pid
}

// processGone waits (bounded) until pid no longer exists: ship killed or
// reaped it.
func processGone(t *testing.T, pid int) {
	t.Helper()
	eventually(t, "process "+strconv.Itoa(pid)+" to be gone", func() bool {
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	})
}
