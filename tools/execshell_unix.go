//go:build unix

package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// pipeGrace is how long the output may stay open after the process group
// is gone: only a process that left the group (setsid, a daemon) can hold
// it, and it is not waited for longer.
const pipeGrace = 2 * time.Second

// runGroup runs spec.argv (`sh -c command`, or bwrap running it) as the
// leader of a new process group and kills the whole group with SIGKILL when the shell exits, when
// the timeout passes or when ctx ends, so no child outlives the call.
//
// The output goes to pipes of our own rather than through exec's copying,
// so that Wait returns as soon as the shell exits even if a background
// child still holds them; killing the group then closes them. The group is
// killed after the shell is reaped: its id stays reserved while any member
// lives, so the kill reaches only our leftovers.
func runGroup(ctx context.Context, spec runSpec) (runOutcome, error) {
	out := runOutcome{stdout: capture{keep: spec.keep}, stderr: capture{keep: spec.keep}}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		return out, fmt.Errorf("creating the stdout pipe: %w", err)
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		closeAll(stdoutR, stdoutW)
		return out, fmt.Errorf("creating the stderr pipe: %w", err)
	}
	defer closeAll(stdoutR, stderrR)

	cmd := exec.Command(spec.argv[0], spec.argv[1:]...)
	cmd.Dir = spec.dir
	cmd.Env = spec.env
	cmd.Stdout = stdoutW
	cmd.Stderr = stderrW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	err = cmd.Start()
	closeAll(stdoutW, stderrW) // the child has its copies
	if err != nil {
		return out, fmt.Errorf("starting %s: %w", filepath.Base(spec.argv[0]), err)
	}
	pgid := cmd.Process.Pid
	wd := startWatchdog(spec.watchdog, pgid)

	var readers sync.WaitGroup
	readers.Go(func() { out.stdout.readFrom(stdoutR) })
	readers.Go(func() { out.stderr.readFrom(stderrR) })

	runCtx, cancel := context.WithTimeout(ctx, spec.timeout)
	defer cancel()
	exited := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-runCtx.Done():
			if ctx.Err() != nil {
				out.cancelled = true
			} else {
				out.timedOut = true
			}
			out.killErr = killGroup(pgid)
		case <-exited:
		}
	}()

	waitErr := cmd.Wait()
	out.duration = time.Since(start)
	close(exited)
	<-watched
	if err := killGroup(pgid); err != nil && out.killErr == nil { // background children the shell left behind
		out.killErr = err
	}
	wd.release()

	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(pipeGrace):
		out.detached = true
		closeAll(stdoutR, stderrR) // ends the blocked reads
		<-drained
	}

	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) {
		return out, fmt.Errorf("waiting for %s: %w", filepath.Base(spec.argv[0]), waitErr)
	}
	out.exitCode = cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		out.signal = ws.Signal().String()
	}
	return out, nil
}

// killGroup sends SIGKILL to every process of the group pgid; a group that
// is gone already is not an error.
func killGroup(pgid int) error {
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing process group %d: %w", pgid, err)
	}
	return nil
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}
