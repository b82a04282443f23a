package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/shipmyagent/ship/internal/shipclient"
)

// queued is an input waiting to be sent.
type queued struct {
	text   string
	echoed bool // already shown in the transcript (an earlier try failed)
}

// tuiState is what the terminal UI is doing.
type tuiState int

const (
	stateIdle         tuiState = iota
	stateBusy                  // a turn is running
	stateReconnecting          // the server is away; backing off
)

// Messages of the terminal UI. gen ties a message to the turn or the
// reconnect round it belongs to, so a late one from an old round is
// ignored.
type (
	turnEventMsg struct {
		gen int
		ev  shipclient.Event
	}
	turnDoneMsg struct {
		gen  int
		text string
		sum  shipclient.Summary
		err  error
	}
	retryMsg  struct{ gen int }
	healthMsg struct{ err error }
	clockMsg  struct{}
	infoMsg   struct {
		st  *shipclient.Status
		err error
	}
	historyMsg struct {
		msgs []shipclient.Message
		err  error
	}
)

// chatModel is the bubbletea model of `ship chat` in a terminal.
type chatModel struct {
	s    chatSession
	ctx  context.Context
	send func(tea.Msg) // the program's Send: how a turn's events arrive
	out  *printer
	now  func() time.Time
	st   tuiStyles

	width int

	editor  editor
	sent    []string // earlier inputs, for Up/Down
	sentPos int      // len(sent) when not browsing

	// queue holds inputs not sent yet, oldest first: typed while a turn
	// ran, or kept while the server is away.
	queue     []queued
	state     tuiState
	gen       int
	cancel    context.CancelFunc
	turn      *turn
	turnStart time.Time
	live      strings.Builder // the reply being streamed

	retryGen     int
	retryAttempt int
	retryAt      time.Time
	checking     bool

	quitting bool
	fatal    error // ends the session with this error (a rejected token)
}

// runChatTUI runs the terminal UI until the user quits. st is the status
// read at start (nil with stErr when the server could not be reached).
func runChatTUI(ctx context.Context, s chatSession, in, out *os.File, st *shipclient.Status, stErr error) error {
	m := &chatModel{s: s, ctx: ctx, out: newPrinter(), now: time.Now, st: newTUIStyles(), width: 80}
	prog := tea.NewProgram(m, tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out))
	m.send = prog.Send
	printCtx, stopPrinter := context.WithCancel(ctx)
	defer stopPrinter()
	go m.out.run(printCtx, prog)
	stopJobs := m.showJobs(printCtx)
	defer stopJobs()

	m.out.println(m.st.dim.Render(fmt.Sprintf("ship chat · %s · chat %s · /help for commands", s.url, s.chatID)))
	if st != nil {
		m.out.println(m.st.dim.Render(fmt.Sprintf("connected to ship %s, model %s", st.Version, st.Model)))
	}
	if stErr != nil {
		m.state = stateReconnecting
	}
	_, err := prog.Run()
	stopPrinter()
	// Lines queued in the last moment (a final notice) still belong on
	// the screen; the terminal is ours again, so they are written plainly.
	for _, l := range m.out.take() {
		fmt.Fprintln(out, l)
	}
	if m.fatal != nil {
		return m.fatal
	}
	if err != nil && !errors.Is(err, tea.ErrProgramKilled) && !errors.Is(err, tea.ErrInterrupted) {
		return fmt.Errorf("terminal UI: %w", err)
	}
	return nil
}

// Init starts the clock and, when the server was unreachable at start,
// the reconnect loop.
func (m *chatModel) Init() tea.Cmd {
	cmds := []tea.Cmd{tickClock()}
	if m.state == stateReconnecting {
		cmds = append(cmds, m.scheduleRetry())
	}
	return tea.Batch(cmds...)
}

// tickClock refreshes the elapsed and countdown figures once a second.
func tickClock() tea.Cmd {
	return tea.Tick(time.Second, func(time.Time) tea.Msg { return clockMsg{} })
}

// Update handles one message.
func (m *chatModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width = msg.Width
	case tea.KeyMsg:
		return m, m.key(msg)
	case clockMsg:
		return m, tickClock()
	case turnEventMsg:
		if msg.gen == m.gen && m.turn != nil {
			m.show(m.turn.apply(msg.ev))
		}
	case turnDoneMsg:
		if msg.gen == m.gen && m.state == stateBusy {
			return m, m.turnDone(msg)
		}
	case retryMsg:
		if msg.gen == m.retryGen && m.state == stateReconnecting {
			m.checking = true
			return m, m.checkHealth()
		}
	case healthMsg:
		return m, m.healthChecked(msg.err)
	case infoMsg:
		for _, l := range infoLines(m.s.url, m.s.chatID, m.s.chatKey, msg.st, msg.err) {
			m.out.println(l)
		}
		if errors.Is(msg.err, shipclient.ErrUnauthorized) {
			return m, m.quitWith(m.s.setupError(msg.err))
		}
	case historyMsg:
		m.showHistory(msg)
	}
	return m, nil
}

// key handles a key press.
func (m *chatModel) key(k tea.KeyMsg) tea.Cmd {
	switch k.Type {
	case tea.KeyCtrlC:
		return m.quitWith(nil)
	case tea.KeyCtrlD:
		if len(m.editor.text) == 0 {
			return m.quitWith(nil)
		}
		m.editor.handleKey(tea.KeyMsg{Type: tea.KeyDelete})
	case tea.KeyEsc:
		if m.state == stateBusy && m.cancel != nil {
			m.cancel() // the turn ends with context.Canceled in turnDone
		}
	case tea.KeyUp, tea.KeyDown:
		m.browse(k.Type == tea.KeyUp)
	case tea.KeyEnter:
		if k.Alt {
			m.editor.handleKey(k)
			return nil
		}
		text, ok := m.editor.submit()
		if !ok || strings.TrimSpace(text) == "" {
			return nil
		}
		m.sent = append(m.sent, text)
		m.sentPos = len(m.sent)
		return m.input(text)
	default:
		m.editor.handleKey(k)
	}
	return nil
}

// browse moves through earlier inputs.
func (m *chatModel) browse(up bool) {
	switch {
	case up && m.sentPos > 0:
		m.sentPos--
	case !up && m.sentPos < len(m.sent):
		m.sentPos++
	default:
		return
	}
	if m.sentPos == len(m.sent) {
		m.editor.set("")
		return
	}
	m.editor.set(m.sent[m.sentPos])
}

// input runs a command or queues a message.
func (m *chatModel) input(line string) tea.Cmd {
	cmd, text, isCmd, err := parseCommand(line)
	if err != nil {
		m.out.println(m.st.err.Render(err.Error()))
		return nil
	}
	if !isCmd {
		m.queue = append(m.queue, queued{text: text})
		return m.startNext()
	}
	switch cmd.name {
	case "quit":
		return m.quitWith(nil)
	case "clear":
		return tea.ClearScreen
	case "help":
		m.out.println(m.st.dim.Render(chatHelp))
	case "info":
		s, ctx := m.s, m.ctx
		return func() tea.Msg {
			st, err := s.status(ctx)
			return infoMsg{st: st, err: err}
		}
	case "history":
		s, ctx, n := m.s, m.ctx, cmd.n
		return func() tea.Msg {
			msgs, err := s.messages(ctx, n)
			return historyMsg{msgs: msgs, err: err}
		}
	}
	return nil
}

// startNext sends the oldest queued input when nothing else runs.
func (m *chatModel) startNext() tea.Cmd {
	if m.state != stateIdle || len(m.queue) == 0 {
		return nil
	}
	next := m.queue[0]
	m.queue = m.queue[1:]
	text := next.text
	m.gen++
	gen := m.gen
	ctx, cancel := context.WithCancel(m.ctx)
	m.state, m.cancel, m.turn, m.turnStart = stateBusy, cancel, newTurn(), m.now()
	m.live.Reset()
	if !next.echoed {
		m.out.println(m.userLines(text))
	}
	client, chatID, send := m.s.client, m.s.chatID, m.send
	return func() tea.Msg {
		sum, err := client.Execute(ctx, chatID, text, func(ev shipclient.Event) {
			send(turnEventMsg{gen: gen, ev: ev})
		})
		return turnDoneMsg{gen: gen, text: text, sum: sum, err: err}
	}
}

// turnDone ends a turn and decides what comes next.
func (m *chatModel) turnDone(msg turnDoneMsg) tea.Cmd {
	m.show(m.turn.finish())
	m.cancel()
	m.state, m.turn = stateIdle, nil
	took := m.now().Sub(m.turnStart)

	var runErr *shipclient.RunError
	var apiErr *shipclient.APIError
	var unreachable *shipclient.UnreachableError
	switch err := msg.err; {
	case err == nil, errors.As(err, &runErr):
		m.out.println(m.st.dim.Render(metricsLine(took, msg.sum.ToolCalls, msg.sum.Usage)))
	case errors.Is(err, context.Canceled) && m.ctx.Err() == nil:
		m.out.println(m.st.notice.Render("stopped waiting; ship still finishes this turn — /history shows the reply"))
	case errors.Is(err, shipclient.ErrUnauthorized):
		return m.quitWith(m.s.setupError(err))
	case errors.As(err, &unreachable) && unreachable.Sent:
		// The server may have taken the message: sending it again could
		// answer it twice, so it is not kept.
		m.out.println(m.st.notice.Render("lost the connection during the reply; ship keeps the turn — /history shows it once ship is back"))
		return m.reconnect()
	case errors.As(err, &unreachable), errors.As(err, &apiErr) && apiErr.Retryable():
		// Never taken: keep the message, first in line.
		m.queue = append([]queued{{text: msg.text, echoed: true}}, m.queue...)
		return m.reconnect()
	default:
		m.out.println(m.st.err.Render(err.Error()))
	}
	return m.startNext()
}

// reconnect enters the reconnecting state with the first backoff delay.
func (m *chatModel) reconnect() tea.Cmd {
	m.state, m.retryAttempt = stateReconnecting, 0
	return m.scheduleRetry()
}

// scheduleRetry waits the next backoff delay before checking /health.
func (m *chatModel) scheduleRetry() tea.Cmd {
	m.retryAttempt++
	m.retryGen++
	m.checking = false
	d := backoffDelay(m.retryAttempt, rand.Float64)
	m.retryAt = m.now().Add(d)
	gen := m.retryGen
	return tea.Tick(d, func(time.Time) tea.Msg { return retryMsg{gen: gen} })
}

func (m *chatModel) checkHealth() tea.Cmd {
	s, ctx := m.s, m.ctx
	return func() tea.Msg { return healthMsg{err: s.healthy(ctx)} }
}

// healthChecked leaves the reconnecting state when the server is back.
func (m *chatModel) healthChecked(err error) tea.Cmd {
	if m.state != stateReconnecting {
		return nil
	}
	if err != nil {
		return m.scheduleRetry()
	}
	m.state, m.checking = stateIdle, false
	m.out.println(m.st.notice.Render("reconnected to " + m.s.url))
	return m.startNext()
}

// quitWith ends the program; err (if any) becomes the command's error.
func (m *chatModel) quitWith(err error) tea.Cmd {
	if m.cancel != nil {
		m.cancel()
	}
	m.quitting, m.fatal = true, err
	return tea.Quit
}
