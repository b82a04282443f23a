package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/shipmyagent/ship/internal/shipclient"
)

// plainChat is `ship chat` without a terminal: lines in, plain lines out,
// so it can be scripted. Replies and metrics go to out, problems to errOut.
type plainChat struct {
	chatSession
	in     io.Reader
	out    io.Writer
	errOut io.Writer

	now    func() time.Time
	sleep  func(context.Context, time.Duration) error
	jitter func() float64
}

// run reads input until /quit or EOF. Only a session that cannot go on (a
// rejected token, a server gone for good) returns an error.
func (p *plainChat) run(ctx context.Context) error {
	if err := p.connect(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := p.showJobs(ctx)
	defer stop()
	inputs := readInputs(ctx, p.in)
	for {
		var in input
		select {
		case <-ctx.Done():
			return nil // interrupted: leaving is what the user asked for
		case in = <-inputs:
		}
		if in.err != nil {
			if errors.Is(in.err, io.EOF) {
				return nil
			}
			return fmt.Errorf("reading input: %w", in.err)
		}
		quit, fatal := p.handle(ctx, in.text)
		if fatal != nil || quit {
			return fatal
		}
	}
}

// showJobs prints the chat's job lines to out while the session lasts,
// between the lines of the turns. It waits (at most healthTimeout) for the
// event stream to open, so a job the first turn starts is seen; stop ends
// the watch and waits for it.
func (p *plainChat) showJobs(ctx context.Context) (stop func()) {
	lw := &lineWriter{w: p.out}
	p.out = lw
	ctx, cancel := context.WithCancel(ctx)
	ready, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		p.watchJobs(ctx, lw.line, ready, p.sleep, p.jitter)
	}()
	select {
	case <-ready:
	case <-time.After(healthTimeout):
	}
	return func() {
		cancel()
		<-done
	}
}

// input is one input read, or the error that ended reading.
type input struct {
	text string
	err  error
}

// readInputs reads inputs on its own goroutine, so that an interrupt ends
// the session even while a read from a terminal blocks. The last input
// sent carries the error that ended reading.
func readInputs(ctx context.Context, r io.Reader) <-chan input {
	ch := make(chan input)
	go func() {
		br := bufio.NewReader(r)
		for {
			// readInput returns text with a nil error, or an error alone.
			text, err := readInput(br)
			select {
			case ch <- input{text: text, err: err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// connect checks the token and waits (within the retry budget) for a
// server that is not up yet.
func (p *plainChat) connect(ctx context.Context) error {
	budget := p.budget()
	for {
		_, err := p.status(ctx)
		if err == nil || ctx.Err() != nil {
			return nil
		}
		if !shipclient.IsUnreachable(err) {
			return p.setupError(err)
		}
		if err := p.backoff(ctx, budget, err); err != nil {
			return err
		}
	}
}

func (p *plainChat) budget() *retryBudget {
	return &retryBudget{start: p.now(), total: plainRetryBudget, jitter: p.jitter, now: p.now}
}

// backoff waits for the next attempt, or says the server is gone for good.
func (p *plainChat) backoff(ctx context.Context, b *retryBudget, cause error) error {
	d, ok := b.next()
	if !ok {
		return fmt.Errorf("gave up after %s: %s (is `ship start` running there? pick the address with --url)",
			b.total, describeErr(cause))
	}
	fmt.Fprintf(p.errOut, "ship chat: %s; retrying in %s…\n", describeErr(cause), d.Round(100*time.Millisecond))
	return p.sleep(ctx, d)
}

// handle runs one input: a command or a turn.
func (p *plainChat) handle(ctx context.Context, line string) (quit bool, fatal error) {
	cmd, text, isCmd, err := parseCommand(line)
	switch {
	case err != nil:
		fmt.Fprintf(p.errOut, "ship chat: %v\n", err)
		return false, nil
	case !isCmd:
		if strings.TrimSpace(text) == "" {
			return false, nil // nothing to say; the server would refuse it
		}
		return false, p.send(ctx, text)
	}
	switch cmd.name {
	case "quit":
		return true, nil
	case "clear":
		// There is no screen to clear; the command is accepted so that a
		// script written for the terminal runs unchanged.
	case "help":
		writeLines(p.out, chatHelp)
	case "info":
		st, err := p.status(ctx)
		if errors.Is(err, shipclient.ErrUnauthorized) {
			return false, p.setupError(err)
		}
		writeLines(p.out, infoLines(p.url, p.chatID, p.chatKey, st, err)...)
	case "history":
		msgs, err := p.messages(ctx, cmd.n)
		if err != nil {
			if errors.Is(err, shipclient.ErrUnauthorized) {
				return false, p.setupError(err)
			}
			fmt.Fprintf(p.errOut, "ship chat: /history: %s\n", describeErr(err))
			return false, nil
		}
		writeLines(p.out, historyLines(msgs, p.now())...)
	}
	return false, nil
}

// send runs a turn, retrying while the server cannot take it.
func (p *plainChat) send(ctx context.Context, text string) error {
	var budget *retryBudget
	for {
		err := p.turn(ctx, text)
		var apiErr *shipclient.APIError
		var unreachable *shipclient.UnreachableError
		switch {
		case err == nil || ctx.Err() != nil:
			return nil
		case errors.Is(err, shipclient.ErrUnauthorized):
			return p.setupError(err)
		case errors.As(err, &unreachable) && unreachable.Sent:
			// The server may have taken the message and may still answer
			// it: sending it again could answer it twice.
			fmt.Fprintf(p.errOut, "ship chat: %s; the reply, if any, will be in /history\n", describeErr(err))
			return nil
		case errors.As(err, &unreachable), errors.As(err, &apiErr) && apiErr.Retryable():
			if budget == nil {
				budget = p.budget()
			}
			if err := p.backoff(ctx, budget, err); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
		default:
			fmt.Fprintf(p.errOut, "ship chat: %v\n", err)
			return nil
		}
	}
}

// turn streams one turn to out. It returns the error that kept the turn
// from running; a run that failed is reported and ends with its metrics.
func (p *plainChat) turn(ctx context.Context, text string) error {
	start := p.now()
	t := newTurn()
	lineOpen := false // the last thing written to out did not end a line
	endLine := func() {
		if lineOpen {
			fmt.Fprintln(p.out)
			lineOpen = false
		}
	}
	show := func(ops []turnOp) {
		for _, op := range ops {
			switch op.kind {
			case opText:
				// Written as it arrives: out is unbuffered, so a reader of
				// the pipe sees each chunk at once.
				fmt.Fprint(p.out, op.text)
				lineOpen = !strings.HasSuffix(op.text, "\n")
			case opMessageEnd:
				endLine()
			case opTool, opFile, opQuestion:
				endLine()
				fmt.Fprintln(p.out, op.text)
			case opRunError:
				endLine()
				fmt.Fprintln(p.errOut, "ship chat: "+op.text)
			}
		}
	}
	sum, err := p.client.Execute(ctx, p.chatID, text, func(ev shipclient.Event) { show(t.apply(ev)) })
	show(t.finish())
	endLine()
	var runErr *shipclient.RunError
	if err != nil && !errors.As(err, &runErr) {
		return err
	}
	fmt.Fprintln(p.out, metricsLine(p.now().Sub(start), sum.ToolCalls, sum.Usage))
	return nil
}

// readInput reads one input: a line, joined with the next while it ends
// with a backslash. At EOF it returns what it has with io.EOF.
func readInput(r *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		line, err := r.ReadString('\n')
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if cont, ok := strings.CutSuffix(line, `\`); ok && err == nil {
			b.WriteString(cont)
			b.WriteByte('\n')
			continue
		}
		b.WriteString(line)
		if err != nil && b.Len() > 0 {
			return b.String(), nil // the last line had no newline; EOF comes next
		}
		return b.String(), err
	}
}
