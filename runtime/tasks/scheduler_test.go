package tasks_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/adaptertest"
	"github.com/shipmyagent/ship/internal/fakeclock"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/events"
	"github.com/shipmyagent/ship/runtime/tasks"
)

const topicKey = "telegram:chat:-100900:topic:5"

func TestTaskRunsAtItsSlotInTheTelegramTopic(t *testing.T) {
	e := newEnv(t, setup{})
	e.say(e.tg.TopicText(-100900, 5, 78, "bob", e.tg.Mention()+" hello"))
	start := e.clock.Now() // 08:00
	e.writeTask("daily-report", taskFile("0 9 * * *", topicKey, "Post the daily report."), start)
	sub, _ := e.eng.Subscribe(func(ev events.Event) bool { return ev.Type == events.TypeTaskStarted }, 0, 16)
	defer sub.Close()

	if next := e.sched.Tick(context.Background()); !next.Equal(start.Add(time.Hour)) {
		t.Errorf("next slot %v, want 09:00", next)
	}
	e.idle()
	if got := e.sentWith("scheduled task"); len(got) != 0 {
		t.Fatalf("ran before its slot: %+v", got)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); e.sched.Run(ctx) }()
	defer func() { cancel(); wg.Wait() }()
	slot := start.Add(time.Hour)
	e.clock.Set(slot)

	sent := e.waitSent(2)[1]
	if sent.Text != "echo: [scheduled task daily-report]\nPost the daily report." || sent.ChatID != -100900 || sent.ThreadID != 5 || sent.ReplyTo != 0 {
		t.Errorf("scheduled post = %+v; want it in topic 5 of -100900, not as a reply", sent)
	}
	runID := fmt.Sprintf("task-daily-report-%d", slot.Unix())
	st := e.waitStatus("daily-report", tasks.StatusOK)
	if !st.LastRun.Equal(slot) || st.LastRunID != runID || !strings.Contains(st.LastResult, "replied in "+topicKey) ||
		!st.NextRun.Equal(slot.Add(24*time.Hour)) {
		t.Errorf("status = %+v", st)
	}
	ev := await(t, sub.C, "task_started of the scheduled run")
	if ev.TaskID != runID || ev.ChatKey != topicKey {
		t.Errorf("task_started = %+v", ev)
	}

	// The topic's log has the run: its user entry comes from the scheduler.
	var user, reply *chat.ChatLogEntryV1
	for _, en := range adaptertest.Entries(t, e.eng, topicKey) {
		switch {
		case en.Role == chat.RoleUser && en.Channel == chat.ChannelScheduler:
			user = &en
		case en.Role == chat.RoleAssistant && strings.Contains(en.Text, "scheduled task"):
			reply = &en
		}
	}
	if user == nil || user.MessageID != runID || user.UserID != "daily-report" || user.Meta["task"] != "daily-report" {
		t.Errorf("user entry = %+v", user)
	}
	if reply == nil || reply.Channel != chat.ChannelTelegram || reply.ChatID != "-100900" {
		t.Errorf("assistant entry = %+v", reply)
	}

	// Later in the same slot, nothing runs again.
	e.clock.Set(slot.Add(30 * time.Second))
	e.sched.Tick(context.Background())
	e.idle()
	if got := e.sentWith("scheduled task"); len(got) != 1 {
		t.Errorf("the slot ran %d times", len(got))
	}
}

func TestMissedSlotsRunOnceAtStart(t *testing.T) {
	e := newEnv(t, setup{})
	e.say(e.tg.PrivateText(77, "ann", "hi"))
	key := "telegram:chat:77"
	six := time.Date(2026, 3, 4, 6, 0, 0, 0, time.UTC)
	// Ran at 06:00; ship was down for the 07:00, 08:00 and 09:00 slots.
	e.writeTask("hourly", taskFile("0 * * * *", key, "Hourly check."), six.Add(-time.Hour))
	e.clock.Set(six)
	e.sched.Tick(context.Background())
	e.waitStatus("hourly", tasks.StatusOK)
	e.close(context.Background())

	later := six.Add(3*time.Hour + 10*time.Minute)
	e2 := newEnv(t, setup{dir: e.dir, tg: e.tg, model: e.model, clock: fakeclock.New(later)})
	// A task written after the 09:00 slot does not catch up on it.
	e2.writeTask("fresh", taskFile("0 * * * *", key, "Fresh check."), later.Add(-5*time.Minute))
	e2.sched.Tick(context.Background())
	e2.sched.Tick(context.Background())
	e2.idle()
	if got := len(e2.sentWith("Hourly check.")); got != 2 {
		t.Errorf("hourly ran %d times in all; want 2 (06:00, then once for the three missed slots)", got)
	}
	if got := e2.sentWith("Fresh check."); len(got) != 0 {
		t.Errorf("a task written after its slot ran: %+v", got)
	}
	st := e2.waitStatus("hourly", tasks.StatusOK)
	if want := fmt.Sprintf("task-hourly-%d", six.Add(3*time.Hour).Unix()); st.LastRunID != want {
		t.Errorf("last run %s; want the 09:00 slot %s", st.LastRunID, want)
	}
}

func TestUnknownChatIsNotRun(t *testing.T) {
	e := newEnv(t, setup{})
	e.writeTask("ghost", taskFile("*/5 * * * *", "telegram:chat:555", "Hello?"), e.clock.Now())
	e.clock.Set(e.clock.Now().Add(5 * time.Minute))
	e.sched.Tick(context.Background())
	e.idle()
	st := e.status("ghost")
	if st.LastStatus != tasks.StatusSkipped || st.LastResult != "chat telegram:chat:555 unknown: ship has not seen it yet" {
		t.Errorf("status = %+v", st)
	}
	if e.model.RequestCount() != 0 || len(e.tg.Sent()) != 0 {
		t.Errorf("the model was called %d times, %d messages sent", e.model.RequestCount(), len(e.tg.Sent()))
	}
	if _, err := e.sched.RunNow(context.Background(), "ghost"); err == nil || !strings.Contains(err.Error(), "ship has not seen it yet") {
		t.Errorf("run by hand: %v", err)
	}
}

func TestInvalidTaskFileLeavesTheOthersRunning(t *testing.T) {
	e := newEnv(t, setup{})
	start := e.clock.Now()
	e.writeTask("broken", "---\ncron: \"0 25 * * *\"\nchatKey: api:chat:reports\n---\nNever.\n", start)
	e.writeTask("api-report", taskFile("*/10 * * * *", "api:chat:reports", "Report to the API chat."), start)
	e.clock.Set(start.Add(10 * time.Minute))
	e.sched.Tick(context.Background())
	st := e.waitStatus("api-report", tasks.StatusOK)
	if !strings.Contains(st.LastResult, "replied in api:chat:reports") {
		t.Errorf("api-report = %+v", st)
	}
	var replied bool
	for _, en := range adaptertest.Entries(t, e.eng, "api:chat:reports") {
		replied = replied || en.Role == chat.RoleAssistant && en.Text == "echo: [scheduled task api-report]\nReport to the API chat."
	}
	if !replied {
		t.Error("no reply in the API chat's log")
	}
	broken := e.status("broken")
	if !strings.Contains(broken.Error, `cron "0 25 * * *"`) || !broken.NextRun.IsZero() || !broken.LastRun.IsZero() {
		t.Errorf("broken = %+v", broken)
	}
	if _, err := e.sched.RunNow(context.Background(), "broken"); err == nil || !strings.Contains(err.Error(), "cron") {
		t.Errorf("running an invalid task by hand: %v", err)
	}
	if _, err := e.sched.RunNow(context.Background(), "nope"); err == nil {
		t.Error("running a task that does not exist worked")
	}
	// Fixing the file makes it run at its next slot.
	e.writeTask("broken", taskFile("*/10 * * * *", "api:chat:reports", "Fixed."), start.Add(11*time.Minute))
	e.clock.Set(start.Add(20 * time.Minute))
	e.sched.Tick(context.Background())
	e.waitStatus("broken", tasks.StatusOK)
}

func TestRunByHandDoesNotUseUpASlot(t *testing.T) {
	e := newEnv(t, setup{})
	e.say(e.tg.PrivateText(77, "ann", "hi"))
	start := e.clock.Now()
	e.writeTask("report", taskFile("0 9 * * *", "telegram:chat:77", "Report."), start)
	id, err := e.sched.RunNow(context.Background(), "report")
	if err != nil {
		t.Fatal(err)
	}
	if st := e.waitStatus("report", tasks.StatusOK); st.LastRunID != id {
		t.Errorf("status = %+v, want run %s", st, id)
	}
	e.clock.Set(start.Add(time.Hour))
	e.sched.Tick(context.Background())
	e.idle()
	got := e.sentWith("Report.")
	if len(got) != 2 || !strings.Contains(got[0].Text, "run by hand") || strings.Contains(got[1].Text, "run by hand") {
		t.Errorf("sent %+v; want the run by hand, then the 09:00 slot", got)
	}
}

func TestDamagedStateNeverRunsASlotTwice(t *testing.T) {
	e := newEnv(t, setup{})
	start := e.clock.Now()
	// The file is older than the 08:00 slot, which may well have run: the
	// bookkeeping that would say so is damaged.
	e.writeTask("report", taskFile("0 * * * *", "api:chat:reports", "Report."), start.Add(-2*time.Hour))
	if err := os.WriteFile(filepath.Join(e.taskDir(), tasks.StateFile), []byte(`{"v":1,"tasks":{"report":{"lastSl`), 0o600); err != nil {
		t.Fatal(err)
	}
	e.sched.Tick(context.Background())
	e.idle()
	if n := e.model.RequestCount(); n != 0 {
		t.Fatalf("a slot from before the damage ran (%d model calls)", n)
	}
	aside, _ := filepath.Glob(filepath.Join(e.taskDir(), tasks.StateFile+".damaged-*"))
	if len(aside) != 1 || !strings.Contains(e.logs.String(), "bookkeeping damaged") {
		t.Errorf("damaged file set aside as %v; logs:\n%s", aside, e.logs.String())
	}
	// The next slot runs as usual.
	e.clock.Set(start.Add(time.Hour))
	e.sched.Tick(context.Background())
	e.waitStatus("report", tasks.StatusOK)
}
