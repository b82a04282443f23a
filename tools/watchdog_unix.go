//go:build unix

package tools

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
)

// WatchdogArg, as the first argument of the ship binary, makes the process
// a command's watchdog (Watch) instead of ship. cmd/ship checks for it
// before anything else.
const WatchdogArg = "__exec-watchdog"

// watchdogDone is what ship writes when the command's group is gone and
// the watchdog has nothing left to do.
const watchdogDone = "done\n"

// Watch is the watchdog of one command's process group: a small process
// of its own that reads its stdin, a pipe whose other end only ship holds.
// When ship says the command is over it exits; when the pipe ends without
// that, ship died (SIGKILL, a crash, the OOM killer) and nobody is left to
// kill the command at its timeout, so it kills the whole group at once.
// Without the sandbox (whose bwrap dies with ship and takes its pid
// namespace along) a command would otherwise outlive ship, and its
// timeout, for good. It returns the process's exit code.
func Watch(stdin io.Reader, pgidArg string) int {
	pgid, err := strconv.Atoi(pgidArg)
	if err != nil || pgid <= 1 {
		return 2
	}
	// Only the pipe decides: a Ctrl+C or a stop signal meant for ship must
	// not end the watchdog before it could act.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	b, _ := io.ReadAll(io.LimitReader(stdin, int64(len(watchdogDone))))
	if string(b) == watchdogDone {
		return 0
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return 1
	}
	return 0
}

// watchdog is a started Watch process.
type watchdog struct {
	cmd *exec.Cmd
	w   *os.File
}

// startWatchdog starts bin (ship itself) as the watchdog of group pgid; nil
// when bin is "" or it cannot start: the command then runs as before,
// killed by ship at its timeout, only not after a crash of ship.
func startWatchdog(bin string, pgid int) *watchdog {
	if bin == "" {
		return nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil
	}
	cmd := exec.Command(bin, WatchdogArg, strconv.Itoa(pgid))
	cmd.Stdin = r
	cmd.Env = []string{}
	// A group of its own: signals sent to ship's group (a terminal's
	// Ctrl+C) are not the watchdog's business.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	_ = r.Close() // the watchdog has its copy
	if err != nil {
		_ = w.Close()
		return nil
	}
	return &watchdog{cmd: cmd, w: w}
}

// release tells the watchdog the command's group is gone, and reaps it in
// the background.
func (d *watchdog) release() {
	if d == nil {
		return
	}
	_, _ = io.WriteString(d.w, watchdogDone)
	_ = d.w.Close()
	go func() { _ = d.cmd.Wait() }()
}
