//go:build unix

package main_test

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// sleepingGroup starts a sleep as the leader of a process group of its own.
func sleepingGroup(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	return cmd.Process.Pid
}

// runWatchdog runs `ship __exec-watchdog arg` with its stdin at end (ship
// "gone") in a group of its own, as cred (nil: this process's user), and
// returns its exit code.
func runWatchdog(t *testing.T, bin, arg string, cred *syscall.Credential) int {
	t.Helper()
	cmd := exec.Command(bin, "__exec-watchdog", arg)
	cmd.Stdin = nil // /dev/null: at end at once
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.ExitCode()
	}
	t.Fatalf("ship %s %s: %v", "__exec-watchdog", arg, err)
	return -1
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// TestWatchdogIsNoWayToKillOthersProcesses is anyone on the machine (a
// command exec_shell runs included) starting `ship __exec-watchdog` by
// hand. It kills one process group, with the rights of whoever started it:
// what `kill -9 -PGID` does, nothing more. A malformed group (0: its own,
// a negative number: one process, trailing junk) is refused, and a user
// without rights over a group cannot have the binary kill it for them.
func TestWatchdogIsNoWayToKillOthersProcesses(t *testing.T) {
	for _, arg := range []string{"0", "", "x"} {
		if code := runWatchdog(t, shipBin, arg, nil); code != 2 {
			t.Errorf("watchdog %q: exit %d, want 2 (refused)", arg, code)
		}
	}
	victim := sleepingGroup(t)
	for _, arg := range []string{"-" + strconv.Itoa(victim), strconv.Itoa(victim) + "x", " " + strconv.Itoa(victim)} {
		if code := runWatchdog(t, shipBin, arg, nil); code != 2 || !alive(victim) {
			t.Errorf("watchdog %q: exit %d, the group alive %v; want 2 and untouched", arg, code, alive(victim))
		}
	}

	if os.Geteuid() != 0 {
		t.Log("not root: the run as another user is left out")
		return
	}
	// The binary where an unprivileged user may run it.
	dir, err := os.MkdirTemp("", "ship-watchdog-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "ship")
	src, err := os.Open(shipBin)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534}
	if code := runWatchdog(t, bin, strconv.Itoa(victim), nobody); code != 1 || !alive(victim) {
		t.Errorf("the watchdog run by nobody against root's group: exit %d, the group alive %v; want 1 (not permitted) and untouched", code, alive(victim))
	}
	// The same user's own group it does kill: it is kill, no more.
	if code := runWatchdog(t, bin, strconv.Itoa(victim), nil); code != 0 {
		t.Errorf("the watchdog run by the group's owner: exit %d", code)
	}
}
