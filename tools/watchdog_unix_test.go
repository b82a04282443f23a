//go:build unix

package tools

import (
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// startGroup starts a sleep as the leader of a new process group.
func startGroup(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	return cmd
}

// TestWatchdogKillsTheGroupWhenShipIsGone: the pipe ending without "done"
// (ship died) kills the command's group; "done" leaves it alone.
func TestWatchdogKillsTheGroupWhenShipIsGone(t *testing.T) {
	released := startGroup(t)
	if code := Watch(strings.NewReader(watchdogDone), strconv.Itoa(released.Process.Pid)); code != 0 {
		t.Fatalf("Watch after done = %d", code)
	}
	if err := syscall.Kill(released.Process.Pid, 0); err != nil {
		t.Errorf("the group of a command ship released was touched: %v", err)
	}

	orphaned := startGroup(t)
	if code := Watch(strings.NewReader(""), strconv.Itoa(orphaned.Process.Pid)); code != 0 {
		t.Fatalf("Watch after EOF = %d", code)
	}
	err := orphaned.Wait()
	if ws, ok := orphaned.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the orphaned command ended with %v, want killed by SIGKILL", err)
	}

	if code := Watch(strings.NewReader(""), "1"); code != 2 {
		t.Errorf("Watch of group 1 = %d, want 2 (refused)", code)
	}
}
