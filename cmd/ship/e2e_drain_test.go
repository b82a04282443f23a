package main_test

import (
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/faketelegram"
)

// TestE2EDrainAPI: after SIGTERM the running turn finishes and its caller
// gets the answer, while /health says "draining" and a new /api/execute
// is refused with 503 and Retry-After; ship then exits 0.
func TestE2EDrainAPI(t *testing.T) {
	t.Parallel()
	fake := startFake(t, nil)
	entered, release := blockTurn(t, fake, "slow question")
	dir := initProject(t)
	setConfig(t, dir, "shutdown", `{"graceSeconds": 20}`)
	p := startShip(t, dir, modelEnv(fake))

	done := p.echoAsync("", "slow question")
	await(t, entered, "the model call of the request")
	sigtermDraining(t, p)
	if r := p.do(t, "GET", "/health", ""); string(r.body) != "{\"status\":\"draining\"}\n" {
		t.Errorf("/health while draining: %s", r.body)
	}
	r := p.do(t, "POST", "/api/execute", executeBody("other", "new question"))
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") != "20" || errorCode(t, r) != "SHUTTING_DOWN" {
		t.Errorf("a new /api/execute while draining: %d, Retry-After %q, body %s; want 503, 20, SHUTTING_DOWN", r.status, r.header.Get("Retry-After"), r.body)
	}
	if p.hasExited() {
		t.Fatal("ship exited before the running turn finished")
	}
	release()
	if err := await(t, done, "the answer to the running request"); err != nil {
		t.Error(err)
	}
	if code := p.wait(t); code != 0 {
		t.Errorf("exit status %d after SIGTERM, want 0", code)
	}
	if n := runsOf(fake, "new question"); n != 0 {
		t.Errorf("the refused request reached the model %d times", n)
	}
}

// TestE2EDrainSecondSignal: a second SIGTERM ends the drain at once; the
// held turn is cut off and runs again at the next start, answered once.
func TestE2EDrainSecondSignal(t *testing.T) {
	t.Parallel()
	fake := startFake(t, nil)
	entered, release := blockTurn(t, fake, "held question")
	dir := initProject(t)
	p := startShip(t, dir, modelEnv(fake)) // the default grace, 30 s: longer than the hang guard
	// /api/send: the message is journaled (an /api/execute caller holds
	// its own request instead, and sends it again).
	if r := p.do(t, "POST", "/api/send", `{"userMessageId":"held-1","message":"held question","chatId":"h"}`); r.status != http.StatusOK {
		t.Fatalf("/api/send: %d %s", r.status, r.body)
	}
	await(t, entered, "the model call of the message")
	sigtermDraining(t, p)
	select {
	case <-p.exited:
		t.Fatal("ship exited after one SIGTERM with a turn still running")
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(hangGuard):
		t.Fatalf("hang guard: ship still runs %s after the second SIGTERM", hangGuard)
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit status %d after two SIGTERMs, want 0", code)
	}
	release()
	p2 := startShip(t, dir, modelEnv(fake))
	eventually(t, "the cut-off turn answered after the restart", func() bool {
		return runsOf(fake, "held question") >= 2
	})
	if code := p2.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("second run: exit status %d", code)
	}
}

// TestE2EDrainGraceRunsOut: a turn still running when shutdown.graceSeconds
// is over is cut off, ship exits 0 by itself, and the next start runs the
// message again (no reply had gone out).
func TestE2EDrainGraceRunsOut(t *testing.T) {
	t.Parallel()
	fake := startFake(t, nil)
	entered, release := blockTurn(t, fake, "endless question")
	dir := initProject(t)
	setConfig(t, dir, "shutdown", `{"graceSeconds": 1}`)
	p := startShip(t, dir, modelEnv(fake))
	if r := p.do(t, "POST", "/api/send", `{"userMessageId":"endless-1","message":"endless question","chatId":"g"}`); r.status != http.StatusOK {
		t.Fatalf("/api/send: %d %s", r.status, r.body)
	}
	await(t, entered, "the model call of the message")
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d when the grace ran out, want 0", code)
	}
	if !strings.Contains(p.stderr.String(), "running turns cut off") {
		t.Error("the log does not say that a running turn was cut off")
	}
	release()
	p2 := startShip(t, dir, modelEnv(fake))
	eventually(t, "the cut-off turn run again after the restart", func() bool {
		return runsOf(fake, "endless question") >= 2
	})
	if code := p2.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("second run: exit status %d", code)
	}
}

// sigtermDraining sends p a SIGTERM and waits until /health answers 503:
// ship drains.
func sigtermDraining(t *testing.T, p *shipProc) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	eventually(t, "/health answering 503 after SIGTERM", func() bool {
		r, err := p.send("GET", "/health", "")
		return err == nil && r.status == http.StatusServiceUnavailable
	})
}

// runsOf counts the model calls that started a run for the user text text
// (calls without a tool result).
func runsOf(fake *fakeopenai.Server, text string) int {
	n := 0
	for _, r := range fake.Requests() {
		if r.LastUser() == text && len(r.ToolResults()) == 0 {
			n++
		}
	}
	return n
}

// TestE2EDrainTelegramBurst: SIGTERM in the middle of a burst of Telegram
// messages from several chats, then a restart: the turn running at SIGTERM
// finishes and its reply goes out before ship exits, the queued ones wait
// in the journal, and in the end every message is answered exactly once,
// in order per chat, no run started twice.
func TestE2EDrainTelegramBurst(t *testing.T) {
	t.Parallel()
	const (
		token         = "4242:e2e-drain-token"
		chats         = 6
		perChat       = 5
		total         = chats * perChat
		repliesBefore = 5
	)
	tg := startTelegram(t, token)
	model := newCrashModel(7, 30*time.Millisecond) // 1..30 ms a call: a burst takes a while
	fake, err := fakeopenai.StartWithOptions(model.handle, fakeopenai.Options{MaxRecorded: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	dir := initProject(t)
	setConfig(t, dir, "shutdown", `{"graceSeconds": 25}`)
	env := append(modelEnv(fake, telegramEnv(tg, token)...), "SHIP_LOG_LEVEL=info")
	runs := &shipRuns{t: t, tg: tg, dir: dir, env: env}

	p := runs.start()
	feed, stopFeeder := startFeeder(tg, 11, chats, perChat, time.Millisecond, 4*time.Millisecond)
	t.Cleanup(stopFeeder)
	await(t, feed.done, "the feeder")
	msgs := feed.pushed()
	if !waitSends(tg, repliesBefore, hangGuard, time.Now().Add(hangGuard)) {
		t.Fatalf("only %d replies before the SIGTERM, want %d", len(tg.Sent()), repliesBefore)
	}
	// The next model call is held: its turn is running when SIGTERM comes.
	held := model.arm()
	t.Cleanup(held.release)
	running := await(t, held.entered, "a model call to hold")
	sigtermDraining(t, p)
	held.release()
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit status %d after SIGTERM, want 0", code)
	}
	sentAtExit := tg.Sent()
	if !answered(sentAtExit, running.text) {
		t.Errorf("the turn running at SIGTERM (%q) was not answered before ship exited", running.text)
	}
	if allAnswered(msgs, sentAtExit) {
		t.Errorf("all %d messages were answered before exit: the drain ran queued turns instead of leaving them for the next start", total)
	}
	t.Logf("%d of %d messages answered before the SIGTERM's exit", len(sentAtExit), total)

	p = runs.start()
	deadline := time.Now().Add(2 * hangGuard)
	for !allAnswered(msgs, tg.Sent()) {
		if !waitSends(tg, len(tg.Sent())+1, hangGuard, deadline) {
			break
		}
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("the restarted ship exited with status %d after SIGTERM, want 0", code)
	}
	res := check(msgs, tg.Sent(), readLogs(runs.stderrs(), msgs))
	if res.duplicated > 0 || res.lost > 0 || res.failedLogged > 0 || res.inDoubt > 0 {
		t.Errorf("after a drain and a restart: %d duplicated %v, %d lost %v, %d marked failed, %d left in doubt; want every message answered once",
			res.duplicated, res.dupes, res.lost, res.losses, res.failedLogged, res.inDoubt)
	}
	if len(res.orderErrs) > 0 || res.misrouted > 0 {
		t.Errorf("order: %v; misrouted: %v", res.orderErrs, res.misroutes)
	}
	if starts, afterSend, _ := model.reruns(); starts > 0 || afterSend > 0 {
		t.Errorf("%d runs started again and %d re-entered after chat_send: a graceful stop interrupts none", starts, afterSend)
	}
}

// answered reports whether the fake recorded the echo of text.
func answered(sent []faketelegram.Sent, text string) bool {
	for _, s := range sent {
		if s.Text == "echo: "+text {
			return true
		}
	}
	return false
}
