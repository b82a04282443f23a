package tasks_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/adaptertest"
	"github.com/shipmyagent/ship/internal/fakeclock"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/tasks"
)

// holdModel makes the model hold the first call of the task's run until
// release; every other call is answered by EchoChatSend.
func holdModel(t *testing.T, m *fakeopenai.Server) (entered <-chan struct{}, release func()) {
	in, out := make(chan struct{}, 1), make(chan struct{})
	release = sync.OnceFunc(func() { close(out) })
	t.Cleanup(release)
	var once sync.Once
	m.SetHandler(func(r fakeopenai.Request) fakeopenai.Response {
		if strings.Contains(r.LastUser(), "[scheduled task report]") {
			held := false
			once.Do(func() { held = true })
			if held {
				in <- struct{}{}
				<-out
			}
		}
		return fakeopenai.EchoChatSend(r)
	})
	return in, release
}

// holdAfterSend is the Telegram dispatcher, except that once the task's
// reply has gone out it holds the run until the run is cut short: the
// moment between a delivered reply and the end of the run.
type holdAfterSend struct {
	dispatch.Dispatcher
	entered chan struct{}
}

func (h holdAfterSend) SendText(ctx context.Context, req dispatch.RequestContext, text string) error {
	err := h.Dispatcher.SendText(ctx, req, text)
	if strings.Contains(text, "[scheduled task report]") {
		h.entered <- struct{}{}
		<-ctx.Done()
	}
	return err
}

// TestKilledRunIsNotPostedTwice is kill -9 during a scheduled run: the
// state says the slot started and the journal holds the run. After a
// restart with the same .ship folder the slot is not taken again, and the
// journal runs the interrupted run again only if its reply had not begun.
func TestKilledRunIsNotPostedTwice(t *testing.T) {
	for _, tc := range []struct {
		name       string
		afterReply bool
	}{{"after its reply went out", true}, {"before its reply", false}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, setup{})
			e.say(e.tg.PrivateText(77, "ann", "hi"))
			var entered <-chan struct{}
			release := func() {}
			if tc.afterReply {
				h := holdAfterSend{Dispatcher: e.tgA, entered: make(chan struct{}, 1)}
				e.eng.Register(chat.ChannelTelegram, h)
				entered = h.entered
			} else {
				entered, release = holdModel(t, e.model)
			}
			nine := time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC)
			e.writeTask("report", taskFile("0 9 * * *", "telegram:chat:77", "Report."), nine.Add(-time.Hour))
			e.clock.Set(nine)
			e.sched.Tick(context.Background())
			await(t, entered, "the scheduled run's model call")
			if tc.afterReply {
				e.waitSent(2)
			}

			// The crash: the run is cut short, and the process never
			// heard how it ended.
			cut, cancel := context.WithCancel(context.Background())
			cancel()
			e.close(cut)
			release()
			adaptertest.WaitFor(t, "the cut run's end", func() bool { return e.status("report").LastStatus != tasks.StatusStarted })
			markStarted(t, e.taskDir(), "report")

			e2 := newEnv(t, setup{dir: e.dir, tg: e.tg, model: e.model, clock: fakeclock.New(nine.Add(30 * time.Second))})
			e2.sched.Tick(context.Background())
			if !tc.afterReply {
				e2.waitSent(2) // the journal runs it again: it had not replied
			}
			e2.idle()
			if got := e2.sentWith("[scheduled task report]"); len(got) != 1 {
				t.Errorf("the 09:00 slot was posted %d times: %+v", len(got), got)
			}
			starts := 0
			for _, r := range e.model.Requests() {
				if strings.Contains(r.LastUser(), "[scheduled task report]") && len(r.ToolResults()) == 0 {
					starts++
				}
			}
			if want := map[bool]int{true: 1, false: 2}[tc.afterReply]; starts != want {
				t.Errorf("the run started %d times, want %d", starts, want)
			}
			st := e2.status("report")
			if st.LastStatus != tasks.StatusInterrupted || !strings.Contains(st.LastResult, "never sent twice") {
				t.Errorf("status after the restart = %+v", st)
			}
		})
	}
}

// markStarted sets the task's last run back to "started", as a process
// killed before its run ended leaves it (the clean close above recorded
// the interruption).
func markStarted(t *testing.T, dir, name string) {
	t.Helper()
	path := filepath.Join(dir, tasks.StateFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	task := st["tasks"].(map[string]any)[name].(map[string]any)
	if task["lastSlot"] == nil {
		t.Fatalf("the slot was not recorded: %s", data)
	}
	task["lastStatus"], task["lastResult"] = tasks.StatusStarted, "started"
	delete(task, "lastEnded")
	out, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
}
