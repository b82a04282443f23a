package main_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/faketelegram"
)

// clusterApprovalPartitions is the cluster section's partition count
// (replica.clusterSection).
const clusterApprovalPartitions = 16

// TestE2EClusterApprovalAcrossReplicas runs two replicas of the real
// binary (embedded NATS, routed together) behind one Telegram fake, with
// the README's approval policy. A forum topic whose chat runs on one
// replica asks for an approval; the admin's tap reaches the other one
// (the poll holder), which must find the approval (ship_state) and queue
// the approved call, which runs once, back on the chat's replica, using
// the grant made on the poll holder.
func TestE2EClusterApprovalAcrossReplicas(t *testing.T) {
	const token = "4242:e2e-cluster-approval-token"
	const group = int64(-100901)
	tg := startTelegram(t, token)
	fake := startFake(t, fakeopenai.RunCommands)
	env := append(modelEnv(fake, telegramEnv(tg, token)...), "SHIP_LOG_LEVEL=info")

	rs := newReplicas(t, 2, "r", func(r *replica) {
		setTools(t, r.dir, fmt.Sprintf(approvalTools, 600))
	})
	names := replicaNames(rs)
	began := time.Now()
	since := map[string]int64{}
	for _, r := range rs {
		since[r.name] = time.Now().UnixMilli()
		r.start(t, env)
	}
	for _, r := range rs {
		p := r.proc()
		within(t, clusterReady, r.name+" answering GET /health with 200", func() bool { return p.healthy() || p.hasExited() })
		if p.hasExited() {
			t.Fatalf("%s exited with status %d before it was ready", r.name, p.cmd.ProcessState.ExitCode())
		}
	}

	// Both replicas listed, the Telegram poll held, and a topic whose
	// partition the other replica holds. A replica gives partitions away
	// only when it holds more than its share, so a partition of one within
	// its share stays there (the first replica up may still be handing
	// its surplus over).
	var st clusterStatus
	var poller, runner string
	var topic int64
	within(t, clusterReady, "both replicas joined, the Telegram poll held and a partition on the other replica", func() bool {
		var ok bool
		if st, ok = rs[0].proc().cluster(); !ok || !st.startedAfter(names, since) {
			return false
		}
		if poller = st.holder("telegram"); poller == "" {
			return false
		}
		topic, runner = topicOffPoller(st, group, poller, (clusterApprovalPartitions+len(rs)-1)/len(rs))
		return runner != ""
	}, func() string { return fmt.Sprintf("%+v", st) })
	t.Logf("after %s: telegram poll held by %s; topic %d runs on %s", time.Since(began).Round(time.Millisecond), poller, topic, runner)

	ctx, cancel := context.WithTimeout(context.Background(), 2*clusterReady)
	defer cancel()
	inTopic := func(s faketelegram.Sent) bool { return s.ChatID == group && s.ThreadID == topic }
	waitFor := func(what string, ok func(faketelegram.Sent) bool) faketelegram.Sent {
		t.Helper()
		var found faketelegram.Sent
		if err := tg.Wait(ctx, func() bool {
			i := slices.IndexFunc(tg.Shown(), ok)
			if i >= 0 {
				found = tg.Shown()[i]
			}
			return i >= 0
		}); err != nil {
			t.Fatalf("waiting for %s: %v; sent: %+v", what, err, tg.Shown())
		}
		return found
	}

	const cmd = "echo e2e-cluster-approved"
	tg.Push(tg.TopicText(group, topic, 1001, "alice", tg.Mention()+" run: "+cmd))
	req := waitFor("the approval request", func(s faketelegram.Sent) bool {
		return inTopic(s) && len(s.Buttons) > 0 && strings.Contains(s.Text, cmd)
	})
	code, _ := strings.CutPrefix(req.Buttons[0][0].CallbackData, "/approve ")
	id, err := tg.Press(group, req.MessageID, 1001, "alice", "/approve "+code)
	if err != nil {
		t.Fatal(err)
	}
	if a, err := tg.WaitAnswered(ctx, id); err != nil || a.Text != "" {
		t.Fatalf("alice's tap answered %q (%v); the topic hears about it instead", a.Text, err)
	}
	waitFor("the approval notice", func(s faketelegram.Sent) bool {
		return inTopic(s) && strings.HasPrefix(s.Text, "Approved by alice") && strings.Contains(s.Text, cmd)
	})
	res := waitFor("the command's output", func(s faketelegram.Sent) bool {
		return inTopic(s) && strings.Contains(s.Text, `e2e-cluster-approved\n`)
	})
	if res.ReplyTo != req.MessageID {
		t.Errorf("the result replies to %d, want the approval request %d", res.ReplyTo, req.MessageID)
	}

	t.Logf("after %s: the approved call's output is in the topic", time.Since(began).Round(time.Millisecond))

	// A second tap finds the approval used, on whichever replica.
	id, err = tg.Press(group, req.MessageID, 1001, "alice", "/approve "+code)
	if err != nil {
		t.Fatal(err)
	}
	if a, err := tg.WaitAnswered(ctx, id); err != nil || !strings.Contains(a.Text, "already approved") {
		t.Errorf("second tap answered %q (%v)", a.Text, err)
	}
	requests, outputs := 0, 0
	for _, s := range tg.Shown() {
		if s.ChatID != group {
			continue
		}
		if s.ThreadID != topic {
			t.Errorf("a message outside topic %d: %+v", topic, s)
		}
		if len(s.Buttons) > 0 {
			requests++
		}
		if strings.Contains(s.Text, `e2e-cluster-approved\n`) {
			outputs++
		}
	}
	if requests != 1 || outputs != 1 {
		t.Errorf("%d approval requests and %d outputs in the topic, want one of each", requests, outputs)
	}
	// Who did what, from the replicas' logs: the run asked and ran the
	// call on the chat's replica; the tap was decided on the poll holder.
	for _, want := range []struct{ msg, on string }{
		{`"message":"approval asked"`, runner},
		{`"message":"approved"`, poller},
		{`"message":"approved call runs"`, runner},
	} {
		var on []string
		for _, r := range rs {
			if n := strings.Count(r.proc().stderr.String(), want.msg); n > 0 {
				on = append(on, fmt.Sprintf("%s×%d", r.name, n))
			}
		}
		if len(on) != 1 || on[0] != want.on+"×1" {
			t.Errorf("log %s on %v, want once on %s", want.msg, on, want.on)
		}
	}
}

// topicOffPoller picks a topic of group whose chat key hashes (as the
// shared queue does: FNV-1a modulo the partitions) to a partition held by
// a replica other than poller that holds no more than share, and returns
// it with that replica ("" when there is none).
func topicOffPoller(st clusterStatus, group int64, poller string, share int) (int64, string) {
	holder := map[int]string{}
	for _, r := range st.Replicas {
		if r.Name == poller || len(r.Partitions) > share {
			continue
		}
		for _, p := range r.Partitions {
			holder[p] = r.Name
		}
	}
	for topic := int64(2); topic < 200; topic++ {
		h := fnv.New32a()
		fmt.Fprintf(h, "telegram:chat:%d:topic:%d", group, topic)
		if r := holder[int(h.Sum32()%clusterApprovalPartitions)]; r != "" {
			return topic, r
		}
	}
	return 0, ""
}
