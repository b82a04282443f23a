package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/faketelegram"
)

// taskTakeover bounds the scheduler's lease moving off a dead replica and
// its new holder's first pass (the lease outlives its holder by 8 s), and
// a run of the dead replica's partition being taken over, on a busy
// 2-core machine under -race.
const taskTakeover = 40 * time.Second

// onceTask writes the task name into every dir: its only slot is the
// current minute of this day (the task format's finest schedule is a
// minute), and its file is an hour older, so the scheduler's next pass
// takes that slot at once as a missed one. It returns the slot.
func onceTask(t *testing.T, name string, dirs ...string) time.Time {
	t.Helper()
	slot := time.Now().UTC().Truncate(time.Minute)
	cron := fmt.Sprintf("%d %d %d %d *", slot.Minute(), slot.Hour(), slot.Day(), int(slot.Month()))
	for _, dir := range dirs {
		writeTask(t, dir, name, "---\ncron: \""+cron+"\"\ntimezone: UTC\nchatKey: telegram:chat:77\n---\nReport.\n", slot.Add(-time.Hour))
	}
	return slot
}

// postsOf counts the Telegram posts of task name's runs (EchoChatSend
// echoes the run's message, which starts with "[scheduled task NAME]").
func postsOf(sent []faketelegram.Sent, name string) int {
	n := 0
	for _, s := range sent {
		if strings.Contains(s.Text, "[scheduled task "+name+"]") {
			n++
		}
	}
	return n
}

// queuedLines counts the "scheduled task queued" log lines of task name
// in every run of every replica.
func queuedLines(rs []*replica, name string) int {
	n := 0
	for _, r := range rs {
		for _, p := range r.runs {
			for _, l := range strings.Split(p.stderr.String(), "\n") {
				if strings.Contains(l, `"message":"scheduled task queued"`) && strings.Contains(l, `"task":"`+name+`"`) {
					n++
				}
			}
		}
	}
	return n
}

// tryTasks reads GET /api/tasks by name; ok is false when p does not
// answer 200 (a JetStream leader election after a kill may outlast the
// read's budget).
func (p *shipProc) tryTasks() (map[string]taskStatus, bool) {
	r, err := p.send("GET", "/api/tasks", "")
	var body struct{ Tasks []taskStatus }
	if err != nil || r.status != 200 || json.Unmarshal(r.body, &body) != nil {
		return nil, false
	}
	out := map[string]taskStatus{}
	for _, s := range body.Tasks {
		out[s.Name] = s
	}
	return out, true
}

// sharedIdle reports whether the shared queue (running items included) is
// empty, as p's /api/status says.
func (p *shipProc) sharedIdle() bool {
	r, err := p.send("GET", "/api/status", "")
	if err != nil || r.status != 200 {
		return false
	}
	var body struct {
		Cluster *struct{ Waiting uint64 }
		Queue   struct{ Waiting, Running int }
	}
	return json.Unmarshal(r.body, &body) == nil && body.Cluster != nil && body.Cluster.Waiting == 0 &&
		body.Queue.Waiting == 0 && body.Queue.Running == 0
}

// TestE2EClusterTaskSlotOnceAcrossSchedulerKill runs three replicas of the
// real binary (embedded NATS, R3) with one scheduled task delivering into a
// Telegram chat. The replica holding the scheduler's lease is SIGKILLed
// right after it took the task's slot (its run is at the model). The next
// holder reads the slot in the shared task records and does not run it
// again; it does run the slot of a task written after the kill, which
// shows it made its passes. Each slot is posted exactly once, and both
// survivors list the same runs.
func TestE2EClusterTaskSlotOnceAcrossSchedulerKill(t *testing.T) {
	const token = "4246:e2e-cluster-tasks-token"
	tg := startTelegram(t, token)
	entered, release := make(chan struct{}, 1), make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseOnce)
	var holdOnce sync.Once
	fake := startFake(t, func(r fakeopenai.Request) fakeopenai.Response {
		if strings.Contains(r.LastUser(), "[scheduled task report]") && len(r.ToolResults()) == 0 {
			hold := false
			holdOnce.Do(func() { hold = true })
			if hold {
				entered <- struct{}{}
				<-release
			}
		}
		return fakeopenai.EchoChatSend(r)
	})
	env := append(modelEnv(fake, telegramEnv(tg, token)...), "SHIP_LOG_LEVEL=info")

	rs := newReplicas(t, 3, "r", nil)
	names := replicaNames(rs)
	since := map[string]int64{}
	for _, r := range rs {
		since[r.name] = time.Now().UnixMilli()
		r.start(t, env)
	}
	within(t, clusterReady, "every replica's /api/status listing r1, r2, r3", func() bool {
		for _, r := range rs {
			if st, ok := r.proc().cluster(); !ok || !st.startedAfter(names, since) {
				return false
			}
		}
		return true
	})
	ctx, cancel := context.WithTimeout(context.Background(), clusterReady)
	defer cancel()
	if err := tg.WaitPolling(ctx); err != nil {
		t.Fatal(err)
	}

	// ship learns the chat's route from a message; then the task comes.
	tg.Push(tg.PrivateText(77, "ann", "hi"))
	if _, err := tg.WaitSent(ctx, 1); err != nil {
		t.Fatal(err)
	}
	slot := onceTask(t, "report", rs[0].dir, rs[1].dir, rs[2].dir)
	select { // the scheduler sees a new file within its 10 s poll
	case <-entered:
	case <-time.After(taskTakeover):
		t.Fatalf("the scheduled run did not reach the model within %s", taskTakeover)
	}

	var holder string
	within(t, taskTakeover, "a holder of the scheduler in /api/status", func() bool {
		for _, r := range rs {
			if st, ok := r.proc().cluster(); ok {
				holder = st.holder("scheduler")
				return holder != ""
			}
		}
		return false
	})
	var victim *replica
	var alive []*replica
	for _, r := range rs {
		if r.name == holder {
			victim = r
		} else {
			alive = append(alive, r)
		}
	}
	if victim == nil {
		t.Fatalf("scheduler holder %q is not one of %v", holder, names)
	}
	victim.kill(t)
	releaseOnce()
	wantID := fmt.Sprintf("task-report-%d", slot.Unix())
	var got map[string]taskStatus
	within(t, taskTakeover, "a survivor answering GET /api/tasks", func() bool {
		var ok bool
		got, ok = alive[0].proc().tryTasks()
		return ok
	})
	if got["report"].LastRunID != wantID {
		t.Fatalf("after the kill %s lists report's last run %+v, want %s: the slot was not recorded as taken", alive[0].name, got["report"], wantID)
	}

	// A task written now runs only once a survivor holds the scheduler
	// and passes; its pass takes report's slot again if it must (report
	// sorts first, and a chat's runs go in order).
	onceTask(t, "wrapup", alive[0].dir, alive[1].dir)
	within(t, taskTakeover, "the new scheduler's run of wrapup posted", func() bool { return postsOf(tg.Sent(), "wrapup") >= 1 })
	within(t, taskTakeover, "report's run posted and the shared queue idle", func() bool {
		return postsOf(tg.Sent(), "report") >= 1 && alive[0].proc().sharedIdle() && alive[1].proc().sharedIdle()
	})
	sent := tg.Sent()
	if n, m := postsOf(sent, "report"), postsOf(sent, "wrapup"); n != 1 || m != 1 {
		t.Errorf("posts per slot: report %d, wrapup %d; want 1 each", n, m)
	}
	// A second take of the slot would not show as a second post within
	// two minutes (the shared stream drops a run queued again under the
	// same id), so the scheduler's own log line counts the takes.
	if n := queuedLines(rs, "report"); n != 1 {
		t.Errorf("report's slot was queued %d times in the replicas' logs, want once", n)
	}
	if st, _ := alive[0].proc().cluster(); st.holder("scheduler") == victim.name {
		t.Errorf("the dead %s still holds the scheduler", victim.name)
	}
	var lists []string
	within(t, taskTakeover, "both survivors listing wrapup's run as ok", func() bool {
		lists = lists[:0]
		for _, r := range alive {
			l, ok := r.proc().tryTasks()
			lists = append(lists, fmt.Sprintf("%s: %+v", r.name, l))
			if !ok || l["wrapup"].LastStatus != "ok" || l["report"].LastRunID != wantID {
				return false
			}
		}
		return true
	}, func() string { return strings.Join(lists, "\n") })
}
