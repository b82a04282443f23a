package jobs

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/shipmyagent/ship/runtime/turn"
)

// ended collects the jobs the manager reports as ended.
type ended chan Job

func open(t *testing.T, opts Options) (*Manager, ended) {
	t.Helper()
	m, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	ch := make(ended, 16)
	m.SetHooks(Hooks{Ended: func(j Job, _ Result) { ch <- j }})
	t.Cleanup(m.Close)
	return m, ch
}

// blocker is a job that runs until released or its context ends.
func blocker(release <-chan struct{}) func(context.Context) Result {
	return func(ctx context.Context) Result {
		select {
		case <-release:
			return Result{OK: true, ExitCode: 0, Content: "ok"}
		case <-ctx.Done():
			return Result{ExitCode: -1, Content: ctx.Err().Error()}
		}
	}
}

func spec(chat string) Spec {
	return Spec{ChatKey: chat, Route: turn.Route{ChatKey: chat, Channel: "telegram"}, Tool: "exec_shell", Label: "exec_shell `make`"}
}

func TestLimitsPerChatAndGlobal(t *testing.T) {
	m, ch := open(t, Options{PerChat: 2, Max: 3})
	release := make(chan struct{})
	for _, c := range []string{"a", "a", "b"} {
		if _, err := m.Start(spec(c), 0, blocker(release)); err != nil {
			t.Fatalf("start in %s: %v", c, err)
		}
	}
	if _, err := m.Start(spec("a"), 0, blocker(release)); !errors.Is(err, ErrChatLimit) {
		t.Fatalf("third job in chat a: got %v, want ErrChatLimit", err)
	}
	if _, err := m.Start(spec("c"), 0, blocker(release)); !errors.Is(err, ErrGlobalLimit) {
		t.Fatalf("fourth job overall: got %v, want ErrGlobalLimit", err)
	}
	if n := len(m.List("")); n != 3 {
		t.Fatalf("a refused job was recorded: %d jobs", n)
	}
	close(release)
	for range 3 {
		if j := <-ch; j.State != Done {
			t.Fatalf("job %s ended %s, want done", j.ID, j.State)
		}
	}
	if _, err := m.Start(spec("a"), 0, blocker(make(chan struct{}))); err != nil {
		t.Fatalf("a finished job still counts against the limit: %v", err)
	}
}

func TestCancelEndsTheJobAsCancelled(t *testing.T) {
	m, ch := open(t, Options{})
	j, err := m.Start(spec("a"), 0, blocker(make(chan struct{})))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Cancel("b", j.ID, "bob"); !errors.Is(err, ErrUnknown) {
		t.Fatalf("cancel from another chat: got %v, want ErrUnknown", err)
	}
	if _, err := m.Cancel("a", j.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	got := <-ch
	if got.State != Cancelled || got.CancelledBy != "alice" {
		t.Fatalf("ended %+v, want cancelled by alice", got)
	}
	if _, err := m.Cancel("a", j.ID, "alice"); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("second cancel: got %v, want ErrNotRunning", err)
	}
}

func TestTimeoutFailsTheJob(t *testing.T) {
	m, ch := open(t, Options{MaxDuration: time.Hour})
	if _, err := m.Start(spec("a"), time.Millisecond, blocker(make(chan struct{}))); err != nil {
		t.Fatal(err)
	}
	if got := <-ch; got.State != Failed {
		t.Fatalf("a job past its timeout ended %s, want failed", got.State)
	}
}

func TestRestartReportsInterruptedOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.json")
	m, err := Open(Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	j, err := m.Start(spec("a"), 0, func(ctx context.Context) Result {
		close(started)
		<-ctx.Done()
		return Result{ExitCode: -1}
	})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	m.Close() // ship stops with the job running

	m2, err := Open(Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	un := m2.Unreported()
	if len(un) != 1 || un[0].ID != j.ID || un[0].State != Interrupted {
		t.Fatalf("after a restart: %+v, want %s interrupted", un, j.ID)
	}
	if err := m2.MarkReported(j.ID); err != nil {
		t.Fatal(err)
	}
	m2.Close()

	m3, err := Open(Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer m3.Close()
	if un := m3.Unreported(); len(un) != 0 {
		t.Fatalf("reported again after a second restart: %+v", un)
	}
	next, err := m3.Start(spec("a"), 0, blocker(make(chan struct{})))
	if err != nil {
		t.Fatal(err)
	}
	if next.ID == j.ID {
		t.Fatalf("a new job reused the id %s", j.ID)
	}
}
