package main_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/faketelegram"
)

// Sizes of TestE2ECluster (issue 17): three replicas, 50 chats × 10
// messages, three SIGKILLs; it must finish in a few minutes on two cores
// under -race.
const (
	clusterChats       = 50
	clusterPerChat     = 10
	clusterKills       = 3
	clusterReady       = 60 * time.Second // a replica starting and joining its NATS cluster, under -race on 2 cores
	clusterStall       = 20 * time.Second // no new reply for this long (over the 15 s takeover): nothing more is coming
	clusterGuard       = 90 * time.Second // the longest any one phase may take
	clusterTakeover    = 15 * time.Second // the longest the Telegram poll may go unheld (issue 17)
	clusterMinGap      = 10 * time.Millisecond
	clusterMaxGap      = 40 * time.Millisecond
	clusterModelMax    = 20 * time.Millisecond // the model takes 1 ns..20 ms per request
	clusterConcurrency = 4                     // queue.concurrency of each replica
)

// clusterKill is one SIGKILL of the test.
type clusterKill struct {
	victim     string
	wasHolder  bool      // it held the Telegram poll when it was killed
	repliesAt  int       // replies recorded when it died
	waited     int       // the reply count the kill waited for
	reached    bool      // false: replies stalled before that count
	at         time.Time // when it was dead
	rejoined   time.Duration
	holderThen string // the Telegram holder once the victim was back
}

// TestE2ECluster runs three replicas of the real binary with embedded NATS
// servers routed together (README: cluster mode), one Telegram fake and one
// echo model. 50 private chats send 10 messages each in four waves; during
// the first three waves one replica is SIGKILLed (the Telegram poll holder
// in the first and third) and restarted in its folder on its ports. The
// fake's records must show every message answered exactly once, in order
// per chat, and the poll never unheld for 15 s or more. With
// SHIP_CLUSTER_LOGS=<dir> every run's full stderr is saved there.
func TestE2ECluster(t *testing.T) {
	const token = "4242:e2e-cluster-token"
	seed := crashSeed(t)
	t.Logf("seed %d (SHIP_CRASH_SEED=%d repeats the choices)", seed, seed)

	tg := startTelegram(t, token)
	model := newCrashModel(seed+1, clusterModelMax)
	fake, err := fakeopenai.StartWithOptions(model.handle, fakeopenai.Options{MaxRecorded: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	env := append(modelEnv(fake, telegramEnv(tg, token)...),
		"SHIP_LOG_LEVEL=info") // the last value wins; debug lines would drown a failure report

	rs := newReplicas(t, 3, "r", func(r *replica) {
		setConfig(t, r.dir, "queue", fmt.Sprintf(`{"concurrency": %d}`, clusterConcurrency))
	})
	names := replicaNames(rs)
	// Registered before the processes' own cleanups, so it runs after
	// them: every process has exited and its output is complete.
	t.Cleanup(func() {
		if dir := os.Getenv("SHIP_CLUSTER_LOGS"); dir != "" {
			saveLogs(t, dir, rs)
		}
	})

	since := map[string]int64{} // replica → unix ms just before its current run started
	start := func(r *replica) {
		since[r.name] = time.Now().UnixMilli()
		r.start(t, env)
	}
	ready := func(r *replica) {
		t.Helper()
		p := r.proc()
		within(t, clusterReady, r.name+" answering GET /health with 200", func() bool { return p.healthy() || p.hasExited() })
		if p.hasExited() {
			t.Fatalf("%s (run %d) exited with status %d before it was ready", r.name, len(r.runs), p.cmd.ProcessState.ExitCode())
		}
	}
	// joined waits until every replica's /api/status lists the three
	// replicas, each with its current run.
	var last []string
	joined := func() {
		t.Helper()
		within(t, clusterReady, "every replica's /api/status listing r1, r2, r3 in their current runs", func() bool {
			last = last[:0]
			ok := true
			for _, r := range rs {
				st, answered := r.proc().cluster()
				if answered {
					last = append(last, fmt.Sprintf("%s: %+v", r.name, st))
				} else {
					last = append(last, r.name+": no answer, or no cluster object in /api/status")
				}
				ok = ok && answered && st.startedAfter(names, since)
			}
			return ok
		}, func() string { return strings.Join(last, "\n") })
	}
	status := func() clusterStatus {
		t.Helper()
		for _, r := range rs {
			if st, ok := r.proc().cluster(); ok {
				return st
			}
		}
		t.Fatal("no replica answers GET /api/status with a cluster object")
		return clusterStatus{}
	}

	for _, r := range rs {
		start(r)
	}
	for _, r := range rs {
		ready(r)
	}
	joined()
	ctx, cancel := context.WithTimeout(context.Background(), clusterReady)
	err = tg.WaitPolling(ctx)
	cancel()
	if err != nil {
		t.Fatalf("no replica long-polls Telegram: %v; holder per /api/status: %q", err, status().holder("telegram"))
	}
	readyAt := time.Now()

	feed := newWaveFeeder(tg, seed+2, clusterChats, clusterPerChat, clusterMinGap, clusterMaxGap)
	total := clusterChats * clusterPerChat
	waves := clusterKills + 1
	wave := func(i int) (from, to int) { return i * total / waves, (i + 1) * total / waves }
	waitWave := func(done <-chan struct{}) {
		t.Helper()
		select {
		case <-done:
		case <-time.After(clusterGuard):
			t.Fatalf("hang guard: a wave was not pushed within %s", clusterGuard)
		}
	}

	var kills []clusterKill
	for k := range clusterKills {
		from, to := wave(k)
		pushing := feed.push(from, to)
		// Kill a quarter of the way into the wave's replies: the rest
		// of the wave is being pushed, queued or run.
		kill := clusterKill{waited: len(tg.Sent()) + (to-from)/4}
		kill.reached = waitSends(tg, kill.waited, clusterStall, time.Now().Add(clusterGuard))
		// Between a dead holder's lease expiring and the next replica
		// taking it, nobody holds the poll: wait for the holder (the
		// takeover bound is checked by the poll gaps below).
		var st clusterStatus
		var holder string
		within(t, clusterTakeover, fmt.Sprintf("kill %d: a holder of the telegram connection in /api/status", k+1), func() bool {
			st = status()
			holder = st.holder("telegram")
			return holder != ""
		}, func() string { return fmt.Sprintf("%+v", st) })
		var victim *replica
		if k%2 == 0 { // the poll holder
			victim = rs[slices.Index(names, holder)]
			kill.wasHolder = true
		} else { // the busiest other replica
			for _, r := range rs {
				if r.name != holder && (victim == nil || st.running(r.name) > st.running(victim.name)) {
					victim = r
				}
			}
		}
		if victim == nil {
			t.Fatalf("kill %d: holder %q is not one of %v", k+1, holder, names)
		}
		kill.victim = victim.name
		victim.kill(t)
		kill.at, kill.repliesAt = time.Now(), len(tg.Sent())
		start(victim)
		ready(victim)
		joined()
		kill.rejoined = time.Since(kill.at)
		kill.holderThen = status().holder("telegram")
		kills = append(kills, kill)
		waitWave(pushing)
	}
	from, to := wave(waves - 1)
	waitWave(feed.push(from, to))
	msgs := feed.pushed()
	if len(msgs) != total {
		t.Fatalf("the feeder pushed %d messages, want %d", len(msgs), total)
	}

	// Every message answered, or no reply for clusterStall: what is
	// missing then is lost.
	deadline := time.Now().Add(clusterGuard)
	for !allAnswered(msgs, tg.Sent()) {
		if !waitSends(tg, len(tg.Sent())+1, clusterStall, deadline) {
			break
		}
	}
	stopAt := time.Now()
	gaps := tg.PollGaps()
	conflicts := tg.PollConflicts()

	// SIGTERM to all at once, as a service manager stopping the group.
	for _, r := range rs {
		if err := r.proc().cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Errorf("SIGTERM %s: %v", r.name, err)
		}
	}
	exits := make([]string, len(rs)) // "0", another status, or "no exit within 10s"
	for i, r := range rs {
		p := r.proc()
		select {
		case <-p.exited:
			exits[i] = strconv.Itoa(p.cmd.ProcessState.ExitCode())
		case <-time.After(exitGuard):
			exits[i] = "no exit within " + exitGuard.String()
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	}

	var stderrs []string
	for _, r := range rs {
		for _, p := range r.runs {
			stderrs = append(stderrs, p.stderr.String())
		}
	}
	logs := readLogs(stderrs, msgs)
	sent := tg.Sent()
	res := check(msgs, sent, logs)
	starts, afterSend, calls := model.reruns()
	longest := longestGap(gaps, readyAt, stopAt)

	var b strings.Builder
	fmt.Fprintf(&b, "cluster, seed %d: 3 replicas, %d chats × %d messages, %d kills, %s from ready to all answered\n",
		seed, clusterChats, clusterPerChat, len(kills), stopAt.Sub(readyAt).Round(time.Millisecond))
	row := func(name string, v any) { fmt.Fprintf(&b, "| %-36s | %v |\n", name, v) }
	b.WriteString("| measure | value |\n|---|---|\n")
	row("messages", res.messages)
	row("answered once", res.answered-res.duplicated)
	row("duplicated (answered twice or more)", res.duplicated)
	row("lost (never answered)", res.lost+res.failedLogged)
	row("  of which marked failed in the log", res.failedLogged)
	row("left in doubt (intent, not re-run)", res.inDoubt)
	row("order violations", len(res.orderErrs))
	row("misrouted replies", res.misrouted)
	row("other sends (notes)", res.other)
	row("longest gap with no poller", longest.Round(time.Millisecond))
	var long []string
	for _, g := range gaps {
		if d := longestGap([]faketelegram.PollGap{g}, readyAt, stopAt); d >= time.Second {
			long = append(long, fmt.Sprintf("%s at +%s", d.Round(time.Millisecond), maxTime(g.From, readyAt).Sub(readyAt).Round(time.Millisecond)))
		}
	}
	row("gaps of 1 s or more (after ready)", strings.Join(long, "; "))
	row("polls ended by another poller (409)", conflicts)
	row("model calls", fmt.Sprintf("%d (%d runs re-started, %d re-entered after chat_send)", calls, starts, afterSend))
	row("exits after SIGTERM (r1, r2, r3)", strings.Join(exits, ", "))
	for i, k := range kills {
		next := stopAt
		if i+1 < len(kills) {
			next = kills[i+1].at
		}
		role := "not the poll holder"
		if k.wasHolder {
			role = "the poll holder"
		}
		stalled := ""
		if !k.reached {
			stalled = ", stalled"
		}
		takeover := ""
		if k.wasHolder {
			takeover = fmt.Sprintf("; next getUpdates %s after the kill", nextPoll(gaps, k.at).Round(time.Millisecond))
		}
		fmt.Fprintf(&b, "kill %d at +%s: %s (%s) after %d replies (waited for %d%s)%s; back in cluster.replicas after %s; "+
			"holder then %q; longest gap with no poller until the next kill %s\n",
			i+1, k.at.Sub(readyAt).Round(time.Millisecond), k.victim, role, k.repliesAt, k.waited, stalled, takeover,
			k.rejoined.Round(time.Millisecond), k.holderThen, longestGap(gaps, k.at, next).Round(time.Millisecond))
	}
	dials := 0
	for k, n := range logs.counts {
		if strings.Contains(k, routeDial) { // one a second per dead peer: noise here
			dials += n
			delete(logs.counts, k)
		}
	}
	fmt.Fprintf(&b, "NATS route redials (one a second per dead peer), left out below: %d\n", dials)
	if counts := sortedCounts(logs.counts); len(counts) > 0 {
		b.WriteString("warnings and errors in the replicas' logs:\n")
		for _, c := range counts {
			b.WriteString("  " + c + "\n")
		}
	}
	t.Log(b.String())

	if res.duplicated > 0 {
		t.Errorf("%d messages answered more than once: %s", res.duplicated, firstN(res.dupes, 20))
	}
	if lost := slices.Concat(res.losses, res.failed); len(lost) > 0 {
		t.Errorf("%d messages never answered (%d of them marked failed): %s", len(lost), res.failedLogged, firstN(withUpdateIDs(lost, msgs), 20))
	}
	if len(res.orderErrs) > 0 {
		t.Errorf("%d replies out of order: %s", len(res.orderErrs), firstN(res.orderErrs, 20))
	}
	// A replica killed between storing a reply's send intent and sending
	// it leaves that message unanswered: the rule is never to answer
	// twice, and recovery cannot tell that case from "killed just after
	// sending". Each kill can strand at most the runs it interrupted.
	if res.inDoubt > clusterKills*clusterConcurrency {
		t.Errorf("%d messages left in doubt after %d kills, want at most %d: %s", res.inDoubt, clusterKills,
			clusterKills*clusterConcurrency, firstN(withUpdateIDs(res.doubted, msgs), 20))
	}
	if res.misrouted > 0 {
		t.Errorf("%d replies went to another chat: %s", res.misrouted, firstN(res.misroutes, 20))
	}
	if longest >= clusterTakeover {
		t.Errorf("Telegram went %s without a poller, want under %s", longest.Round(time.Millisecond), clusterTakeover)
	}
	for i, exit := range exits {
		if exit != "0" {
			t.Errorf("%s after SIGTERM: %s, want exit status 0", rs[i].name, exit)
		}
	}
}

// within calls cond with a short backoff until it is true, failing the
// test after guard with what and, when given, detail().
func within(t *testing.T, guard time.Duration, what string, cond func() bool, detail ...func() string) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for delay := 2 * time.Millisecond; !cond(); delay = min(2*delay, 200*time.Millisecond) {
		if time.Now().After(deadline) {
			msg := fmt.Sprintf("hang guard: still waiting for %s after %s", what, guard)
			for _, d := range detail {
				msg += "\n" + d()
			}
			t.Fatal(msg)
		}
		time.Sleep(delay)
	}
}
