package main

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
)

// tuiStyles are the looks of the terminal UI. lipgloss drops the colours
// on terminals (and under NO_COLOR) that cannot show them.
type tuiStyles struct {
	user, dim, err, notice, role, cursor, prompt lipgloss.Style
}

func newTUIStyles() tuiStyles {
	return tuiStyles{
		user:   lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("12")),
		dim:    lipgloss.NewStyle().Faint(true),
		err:    lipgloss.NewStyle().Foreground(lipgloss.Color("9")),
		notice: lipgloss.NewStyle().Foreground(lipgloss.Color("11")),
		role:   lipgloss.NewStyle().Foreground(lipgloss.Color("13")),
		cursor: lipgloss.NewStyle().Reverse(true),
		prompt: lipgloss.NewStyle().Foreground(lipgloss.Color("12")),
	}
}

// maxMarkdownWidth keeps replies readable on very wide terminals.
const maxMarkdownWidth = 100

// inputHint is the key help under the input area.
const inputHint = "enter send · alt+enter or \\ newline · ↑↓ earlier input · esc stop waiting · /help · ctrl+c quit"

// View draws the live part of the screen: the reply being streamed, the
// running tool calls, a status line and the input. Everything finished
// has been printed above it, into the terminal's scrollback.
func (m *chatModel) View() string {
	if m.quitting {
		return ""
	}
	width := max(m.width, 20)
	var parts []string
	if m.live.Len() > 0 {
		parts = append(parts, lipgloss.NewStyle().Width(width).Render(m.live.String()))
	}
	if m.turn != nil {
		for _, ev := range m.turn.running() {
			line := "⚙ " + ev.AbilityID
			if args := compactJSON(ev.Input); args != "" && args != "{}" {
				line += " " + oneLine(args, maxArgsRunes)
			}
			parts = append(parts, m.st.dim.Render(line+" …"))
		}
	}
	if s := m.statusLine(); s != "" {
		parts = append(parts, s)
	}
	for _, q := range m.queue {
		parts = append(parts, m.st.dim.Render("queued › "+oneLine(q.text, width-12)))
	}
	parts = append(parts, m.st.dim.Render(strings.Repeat("─", width)))
	for i, l := range m.editor.lines(func(s string) string { return m.st.cursor.Render(s) }) {
		prefix := "  "
		if i == 0 {
			prefix = m.st.prompt.Render("›") + " "
		}
		parts = append(parts, prefix+l)
	}
	parts = append(parts, m.st.dim.Render(oneLine(inputHint, width)))
	return strings.Join(parts, "\n")
}

// statusLine says what the client is waiting for, if anything.
func (m *chatModel) statusLine() string {
	now := m.now()
	switch m.state {
	case stateBusy:
		what := "waiting in the server's queue"
		if m.turn != nil && m.turn.started {
			what = "thinking"
		}
		return m.st.dim.Render(fmt.Sprintf("%s… %ds", what, int(now.Sub(m.turnStart).Seconds())))
	case stateReconnecting:
		left := max(1, int(math.Ceil(m.retryAt.Sub(now).Seconds())))
		s := fmt.Sprintf("%s is unreachable — reconnecting in %ds…", m.s.url, left)
		if m.checking {
			s = fmt.Sprintf("%s is unreachable — checking…", m.s.url)
		}
		if n := len(m.queue); n > 0 {
			s += fmt.Sprintf(" (%s kept)", plural(n, "message"))
		}
		return m.st.notice.Render(s)
	}
	return ""
}

// userLines echoes what the user sent into the transcript, after a blank
// line that sets each turn apart.
func (m *chatModel) userLines(text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		prefix := "  "
		if i == 0 {
			prefix = "› "
		}
		lines[i] = m.st.user.Render(prefix + l)
	}
	return "\n" + strings.Join(lines, "\n")
}

// show puts a turn's ops on screen.
func (m *chatModel) show(ops []turnOp) {
	for _, op := range ops {
		switch op.kind {
		case opText:
			m.live.WriteString(op.text)
		case opMessageEnd:
			m.live.Reset()
			m.out.println(m.markdown(op.text))
		case opTool:
			style := m.st.dim
			if !op.ok {
				style = m.st.err
			}
			m.out.println(style.Render(op.text))
		case opRunError:
			m.out.println(m.st.err.Render(op.text))
		case opFile:
			// Unstyled: the URL stays one plain run of text a terminal
			// can turn into a link.
			m.out.println(op.text)
		case opQuestion:
			m.out.println(m.st.notice.Render(op.text))
		}
	}
}

// showHistory prints /history's answer.
func (m *chatModel) showHistory(msg historyMsg) {
	if msg.err != nil {
		m.out.println(m.st.err.Render("/history: " + describeErr(msg.err)))
		return
	}
	for _, l := range historyLines(msg.msgs, m.now()) {
		m.out.println(m.st.dim.Render(l))
	}
}

// markdown renders a finished reply; plain text when it cannot.
// markdown styles a finished reply for the terminal. glamour would do
// more, but it pulls in chroma, whose lexer and style registries cost every
// ship process (ship start included) 16 MiB of memory and 20 ms at start-up;
// headings, emphasis and code are what chat replies use.
func (m *chatModel) markdown(text string) string {
	width := min(max(m.width, 20), maxMarkdownWidth)
	return renderMarkdown(text, width-4)
}

// printer prints finished lines above the UI, in order. tea.Println
// commands run concurrently and may overtake each other; one goroutine
// sending them one by one keeps the transcript in order.
type printer struct {
	mu    sync.Mutex
	lines []string
	wake  chan struct{}
}

func newPrinter() *printer { return &printer{wake: make(chan struct{}, 1)} }

// println queues s; it never blocks, so Update may call it.
func (p *printer) println(s string) {
	p.mu.Lock()
	p.lines = append(p.lines, s)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// take returns the queued lines and empties the queue.
func (p *printer) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	lines := p.lines
	p.lines = nil
	return lines
}

// run sends queued lines to the program until ctx is done.
func (p *printer) run(ctx context.Context, prog *tea.Program) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		}
		if lines := p.take(); len(lines) > 0 {
			prog.Send(tea.Println(strings.Join(lines, "\n"))())
		}
	}
}

// plural is "1 message" or "2 messages".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
