package main_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeopenai"
)

// TestE2EDrainRollingRestart: three replicas under a steady stream of
// Telegram messages are restarted one at a time with SIGTERM, as a rolling
// deploy does. Each drains (its idle partitions and the Telegram poll go to
// the others, its running turns finish), exits 0 and comes back; every
// message is answered exactly once, in order per chat, and no run is
// interrupted and started again.
func TestE2EDrainRollingRestart(t *testing.T) {
	const (
		token   = "4242:e2e-rolling-token"
		chats   = 30
		perChat = 8
	)
	tg := startTelegram(t, token)
	model := newCrashModel(21, clusterModelMax)
	fake, err := fakeopenai.StartWithOptions(model.handle, fakeopenai.Options{MaxRecorded: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	env := append(modelEnv(fake, telegramEnv(tg, token)...), "SHIP_LOG_LEVEL=info")
	rs := newReplicas(t, 3, "d", func(r *replica) {
		setConfig(t, r.dir, "queue", `{"concurrency": 4}`)
		setConfig(t, r.dir, "shutdown", `{"graceSeconds": 20}`)
	})
	ready := func(r *replica) {
		t.Helper()
		p := r.proc()
		within(t, clusterReady, r.name+" answering GET /health with 200", func() bool { return p.healthy() || p.hasExited() })
		if p.hasExited() {
			t.Fatalf("%s (run %d) exited with status %d before it was ready", r.name, len(r.runs), p.cmd.ProcessState.ExitCode())
		}
	}
	members := func() int {
		for _, r := range rs {
			if st, ok := r.proc().cluster(); ok {
				return len(st.Replicas)
			}
		}
		return 0
	}
	for _, r := range rs {
		r.start(t, env)
	}
	for _, r := range rs {
		ready(r)
	}
	within(t, clusterReady, "three replicas in /api/status", func() bool { return members() == 3 })

	feed := newWaveFeeder(tg, 22, chats, perChat, clusterMinGap, clusterMaxGap)
	total := chats * perChat
	waves := len(rs) + 1
	wave := func(i int) (from, to int) { return i * total / waves, (i + 1) * total / waves }
	var exits []string
	for i, r := range rs {
		from, to := wave(i)
		pushing := feed.push(from, to)
		waitSends(tg, len(tg.Sent())+(to-from)/4, clusterStall, time.Now().Add(clusterGuard))
		p := r.proc()
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		exits = append(exits, fmt.Sprintf("%s: %d", r.name, p.wait(t)))
		r.start(t, env)
		ready(r)
		within(t, clusterReady, "three replicas in /api/status again", func() bool { return members() == 3 })
		select {
		case <-pushing:
		case <-time.After(clusterGuard):
			t.Fatalf("hang guard: wave %d was not pushed within %s", i+1, clusterGuard)
		}
	}
	from, to := wave(waves - 1)
	select {
	case <-feed.push(from, to):
	case <-time.After(clusterGuard):
		t.Fatal("hang guard: the last wave was not pushed")
	}
	msgs := feed.pushed()
	deadline := time.Now().Add(clusterGuard)
	for !allAnswered(msgs, tg.Sent()) {
		if !waitSends(tg, len(tg.Sent())+1, clusterStall, deadline) {
			break
		}
	}
	for _, r := range rs {
		_ = r.proc().cmd.Process.Signal(syscall.SIGTERM)
	}
	var stderrs []string
	for _, r := range rs {
		if code := r.proc().wait(t); code != 0 {
			t.Errorf("%s exited with status %d at the end", r.name, code)
		}
		for _, p := range r.runs {
			stderrs = append(stderrs, p.stderr.String())
		}
	}
	for _, e := range exits {
		if !strings.HasSuffix(e, ": 0") {
			t.Errorf("a rolling restart's SIGTERM: %s, want exit status 0", e)
		}
	}
	res := check(msgs, tg.Sent(), readLogs(stderrs, msgs))
	starts, afterSend, calls := model.reruns()
	t.Logf("rolling restart: %d messages, %d answered, %d duplicated, %d lost, %d model calls (%d runs started again, %d re-entered after chat_send)",
		res.messages, res.answered, res.duplicated, res.lost, calls, starts, afterSend)
	if res.duplicated > 0 || res.lost > 0 || res.failedLogged > 0 || res.inDoubt > 0 {
		t.Errorf("%d duplicated %v, %d lost %v, %d marked failed, %d left in doubt; want every message answered once",
			res.duplicated, firstN(res.dupes, 10), res.lost, firstN(res.losses, 10), res.failedLogged, res.inDoubt)
	}
	if len(res.orderErrs) > 0 || res.misrouted > 0 {
		t.Errorf("order: %v; misrouted: %v", firstN(res.orderErrs, 10), firstN(res.misroutes, 10))
	}
	if starts > 0 || afterSend > 0 {
		t.Errorf("%d runs started again and %d re-entered after chat_send: a rolling restart with drain interrupts none", starts, afterSend)
	}
}
