package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/shipmyagent/ship/internal/shipclient"
)

// maxJobLabelRunes bounds the call a job line shows.
const maxJobLabelRunes = 120

// jobLine words a job event as one line: "⚙ job J3 started: exec_shell
// `make test`", "⚙ job J3 done after 20s (exit 0)", "… failed …",
// "⚙ job J3 cancelled by al after 5s", "⚙ job J3 interrupted".
func jobLine(e shipclient.JobEvent) string {
	id := terminalSafe(e.JobID)
	if e.Type == shipclient.TypeJobStarted {
		return fmt.Sprintf("⚙ job %s started: %s", id, oneLine(terminalSafe(e.Label), maxJobLabelRunes))
	}
	took := e.Duration().Round(time.Second)
	exit := ""
	if e.ExitCode != nil && *e.ExitCode >= 0 {
		exit = fmt.Sprintf(" (exit %d)", *e.ExitCode)
	}
	switch e.State {
	case shipclient.JobCancelled:
		by := ""
		if e.CancelledBy != "" {
			by = " by " + oneLine(terminalSafe(e.CancelledBy), 40)
		}
		return fmt.Sprintf("⚙ job %s cancelled%s after %s", id, by, took)
	case shipclient.JobInterrupted:
		return fmt.Sprintf("⚙ job %s interrupted: ship stopped while it ran", id)
	case shipclient.JobDone:
		return fmt.Sprintf("⚙ job %s done after %s%s", id, took, exit)
	case shipclient.JobFailed:
		return fmt.Sprintf("⚙ job %s failed after %s%s", id, took, exit)
	}
	return fmt.Sprintf("⚙ job %s %s after %s%s", id, oneLine(terminalSafe(e.State), 20), took, exit)
}

// terminalSafe drops the control characters of text the server relays
// (a job's label is a command a model wrote): an escape sequence must not
// reach the terminal, nor a bidi override reorder the line.
func terminalSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return ' '
		case unicode.IsControl(r), unicode.Is(unicode.Bidi_Control, r):
			return -1
		}
		return r
	}, s)
}

// watchJobs shows the chat's job lines until ctx ends. It follows the
// chat's event stream, resuming after the last event it read when the
// connection drops, with backoff (1, 2, 4 … 30 s; from 1 s again after a
// stream that was up). ready is closed after the first attempt, so the
// first turn starts after the stream is open and its job is seen. A
// server that refuses the stream for good (a token it rejects, a ship
// without it) ends the watch: the turns report what is wrong.
func (s chatSession) watchJobs(ctx context.Context, show func(string), ready chan<- struct{},
	sleep func(context.Context, time.Duration) error, jitter func() float64) {
	var once sync.Once
	opened := func() { once.Do(func() { close(ready) }) }
	defer opened()
	lastID, attempt := "", 0
	for {
		var err error
		up := false
		lastID, err = s.client.WatchJobs(ctx, s.chatKey, lastID, func() { up = true; opened() }, func(e shipclient.JobEvent) { show(jobLine(e)) })
		opened()
		var apiErr *shipclient.APIError
		switch {
		case ctx.Err() != nil:
			return
		case shipclient.IsUnreachable(err), errors.As(err, &apiErr) && apiErr.Retryable():
		default:
			return
		}
		if up {
			attempt = 0 // the stream was up: come back soon
		}
		attempt++
		if sleep(ctx, backoffDelay(attempt, jitter)) != nil {
			return
		}
	}
}

// showJobs prints the chat's job lines above the UI, as tool lines are,
// until stop is called or ctx ends.
func (m *chatModel) showJobs(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.s.watchJobs(ctx, func(l string) { m.out.println(m.st.notice.Render(l)) }, make(chan struct{}), sleepCtx, rand.Float64)
	}()
	return func() {
		cancel()
		<-done
	}
}

// lineWriter lets job lines in between the lines of a turn: a job line
// that comes while a reply is half written waits for the reply's line to
// end, so it never splits one.
type lineWriter struct {
	mu      sync.Mutex
	w       io.Writer
	midLine bool
	held    []string
}

// Write writes p; held job lines follow once a line has ended.
func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.w.Write(p)
	if len(p) > 0 {
		l.midLine = p[len(p)-1] != '\n'
	}
	if err == nil && !l.midLine {
		err = l.flushLocked()
	}
	return n, err
}

// line writes one job line now, or once the current line has ended.
func (l *lineWriter) line(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held = append(l.held, s)
	if !l.midLine {
		_ = l.flushLocked() // a broken stdout ends the session elsewhere
	}
}

func (l *lineWriter) flushLocked() error {
	for len(l.held) > 0 {
		if _, err := fmt.Fprintln(l.w, l.held[0]); err != nil {
			return err
		}
		l.held = l.held[1:]
	}
	return nil
}
