package main_test

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/faketelegram"
)

// Sizes of TestE2ECrashRecovery: small enough to finish well under two
// minutes on two cores under -race, large enough that kills land in every
// phase of a run.
const (
	crashChats   = 50                   // private chats, user ids 1..50
	crashPerChat = 5                    // messages per chat
	crashKills   = 5                    // SIGKILLs
	crashStall   = 5 * time.Second      // no new reply for this long: nothing more is coming
	crashGuard   = 60 * time.Second     // the longest any one phase may take
	crashMinGap  = 2 * time.Millisecond // pause between two pushes of the feeder
	crashMaxGap  = 30 * time.Millisecond
	crashModelMs = 6 // the model takes 1..6 ms per request
)

// killPoint is one SIGKILL of the test.
type killPoint struct {
	base, target int    // replies recorded when the run started waiting, and the count it waited for
	reached      bool   // false: replies stopped coming before target (killed anyway)
	kind         string // "reply": right after the target-th reply; "model": inside a model call
	held         heldRequest
	at           int // replies recorded when ship was dead
}

func (k killPoint) String() string {
	s := fmt.Sprintf("after %d replies (waited for %d", k.at, k.target)
	if !k.reached {
		s += ", stalled"
	}
	s += "), " + k.kind
	if k.kind == "model" {
		phase := "before chat_send"
		if k.held.afterSend {
			phase = "after chat_send"
		}
		s += fmt.Sprintf(" call of %q %s", k.held.text, phase)
	}
	return s
}

// crashSeed is SHIP_CRASH_SEED, or a fixed default so that runs make the
// same choices (the timing still differs from run to run).
func crashSeed(t *testing.T) int64 {
	v := os.Getenv("SHIP_CRASH_SEED")
	if v == "" {
		return 1
	}
	seed, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("SHIP_CRASH_SEED=%q is not an integer", v)
	}
	return seed
}

// TestE2ECrashRecovery kills the real binary with SIGKILL at pseudo-random
// points while a steady stream of Telegram messages from 50 chats arrives,
// restarts it in the same project folder, and checks against the fake
// Telegram's records that every message was answered exactly once, in
// order per chat (README: Reliability). A message
// "marked failed" in ship's log counts as settled, and is reported apart.
func TestE2ECrashRecovery(t *testing.T) {
	const token = "4242:e2e-crash-token"
	seed := crashSeed(t)
	t.Logf("seed %d (SHIP_CRASH_SEED=%d repeats the choices)", seed, seed)
	rng := rand.New(rand.NewSource(seed))

	// The platform and the model live for the whole test: they outlive
	// every ship process.
	tg := startTelegram(t, token)
	model := newCrashModel(seed+1, crashModelMs*time.Millisecond)
	fake, err := fakeopenai.StartWithOptions(model.handle, fakeopenai.Options{MaxRecorded: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)

	dir := initProject(t)
	env := append(modelEnv(fake, telegramEnv(tg, token)...),
		"SHIP_LOG_LEVEL=info") // the last value wins; debug lines would drown a failure report
	runs := &shipRuns{t: t, tg: tg, dir: dir, env: env}

	p := runs.start()
	total := crashChats * crashPerChat
	feed, stopFeeder := startFeeder(tg, seed+2, crashChats, crashPerChat, crashMinGap, crashMaxGap)
	t.Cleanup(stopFeeder)

	var kills []killPoint
	for range crashKills {
		lo, hi := total/(3*crashKills), total/crashKills
		k := killPoint{base: len(tg.Sent()), kind: []string{"reply", "model"}[rng.Intn(2)]}
		k.target = k.base + lo + rng.Intn(hi-lo+1)
		k.reached = waitSends(tg, k.target, crashStall, time.Now().Add(crashGuard))
		var held *heldCall
		if k.kind == "model" {
			held = model.arm()
			t.Cleanup(held.release)
			select {
			case k.held = <-held.entered:
			case <-time.After(crashStall):
				if model.disarm(held) {
					k.kind = "model (no call came)"
				} else {
					k.held = await(t, held.entered, "the held model call") // taken just now
				}
			}
		}
		if p.hasExited() {
			t.Fatalf("ship (run %d) exited by itself with status %d before kill %d", len(runs.procs), p.cmd.ProcessState.ExitCode(), len(kills)+1)
		}
		if err := p.cmd.Process.Kill(); err != nil {
			t.Fatalf("SIGKILL: %v", err)
		}
		p.wait(t)
		if held != nil {
			held.release()
		}
		k.at = len(tg.Sent())
		kills = append(kills, k)
		p = runs.start()
	}

	select {
	case <-feed.done:
	case <-time.After(crashGuard):
		t.Fatalf("hang guard: the feeder did not finish within %s", crashGuard)
	}
	msgs := feed.pushed()
	if len(msgs) != total {
		t.Fatalf("the feeder pushed %d messages, want %d", len(msgs), total)
	}

	// Every message answered, or no reply for crashStall: what is missing
	// then is lost (or marked failed).
	deadline := time.Now().Add(crashGuard)
	for {
		sent := tg.Sent()
		if allAnswered(msgs, sent) {
			break
		}
		wait := min(crashStall, time.Until(deadline))
		if wait <= 0 {
			break
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		_, err := tg.WaitSent(ctx, len(sent)+1)
		cancel()
		if err != nil {
			break
		}
	}
	// SIGTERM: whatever is still in flight is sent (and recorded) before
	// the records are read.
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("the last ship exited with status %d after SIGTERM, want 0", code)
	}

	logs := readLogs(runs.stderrs(), msgs)
	sent := tg.Sent()
	res := check(msgs, sent, logs)
	starts, afterSend, calls := model.reruns()

	var b strings.Builder
	fmt.Fprintf(&b, "crash recovery, seed %d: %d chats × %d messages, %d ship runs\n", seed, crashChats, crashPerChat, len(runs.procs))
	fmt.Fprintf(&b, "  %-28s %d\n", "messages", res.messages)
	fmt.Fprintf(&b, "  %-28s %d\n", "kills", len(kills))
	fmt.Fprintf(&b, "  %-28s %d\n", "answered", res.answered)
	fmt.Fprintf(&b, "  %-28s %d\n", "duplicated", res.duplicated)
	fmt.Fprintf(&b, "  %-28s %d\n", "lost", res.lost)
	fmt.Fprintf(&b, "  %-28s %d\n", "marked failed (logged)", res.failedLogged)
	fmt.Fprintf(&b, "  %-28s %d\n", "left in doubt (logged)", res.inDoubt)
	fmt.Fprintf(&b, "  %-28s %d\n", "order violations", len(res.orderErrs))
	fmt.Fprintf(&b, "  %-28s %d\n", "misrouted replies", res.misrouted)
	fmt.Fprintf(&b, "  %-28s %d\n", "other sends (notes)", res.other)
	fmt.Fprintf(&b, "  %-28s %d (%d runs re-started, %d re-entered after chat_send)\n", "model calls", calls, starts, afterSend)
	fmt.Fprintf(&b, "  %-28s %d\n", "sends recorded", len(sent))
	for i, k := range kills {
		fmt.Fprintf(&b, "  kill %d: %s\n", i+1, k)
	}
	if len(logs.failedLines) > 0 {
		fmt.Fprintf(&b, "  \"marked failed\" lines: %d (%d not attributable to a message)\n", len(logs.failedLines), logs.unattributed)
	}
	if counts := sortedCounts(logs.counts); len(counts) > 0 {
		b.WriteString("  warnings and errors in ship's logs:\n")
		for _, c := range counts {
			b.WriteString("    " + c + "\n")
		}
	}
	t.Log(b.String())

	if res.duplicated > 0 {
		t.Errorf("%d messages answered more than once: %s", res.duplicated, firstN(res.dupes, 20))
	}
	if res.lost > 0 {
		t.Errorf("%d messages never answered nor marked failed: %s", res.lost, firstN(res.losses, 20))
	}
	if len(res.orderErrs) > 0 {
		t.Errorf("%d replies out of order: %s", len(res.orderErrs), firstN(res.orderErrs, 20))
	}
	if res.misrouted > 0 {
		t.Errorf("%d replies went to another chat: %s", res.misrouted, firstN(res.misroutes, 20))
	}
	if res.failedLogged > 0 {
		t.Logf("marked failed after crashes (allowed): %s", firstN(res.failed, 20))
	}
	if res.inDoubt > 0 {
		t.Logf("not run again, a send intent was recorded before the crash (allowed: never answer twice): %s", firstN(res.doubted, 20))
	}
	if res.other > 0 {
		t.Logf("sends that answer no message: %s", firstN(res.others, 20))
	}
}

// allAnswered reports whether every message has at least one reply.
func allAnswered(msgs []pushed, sent []faketelegram.Sent) bool {
	got := make(map[string]bool, len(sent))
	for _, s := range sent {
		got[s.Text] = true
	}
	for _, m := range msgs {
		if !got["echo: "+m.text] {
			return false
		}
	}
	return true
}
