package main

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// drive runs cmd the way the bubbletea runtime would (synchronously here)
// and feeds what it produced, events first, back into m. Commands that only
// wait (ticks) are not run: the test decides what happens next.
func drive(t *testing.T, m *chatModel, sent *[]tea.Msg, cmd tea.Cmd) tea.Cmd {
	t.Helper()
	if cmd == nil {
		return nil
	}
	done := cmd()
	for _, ev := range *sent {
		m.Update(ev) // a turn's events answer with no command
	}
	*sent = nil
	_, next := m.Update(done)
	return next
}

func TestTUIKeepsInputUntilTheServerIsBack(t *testing.T) {
	f := newFakeShip(t)
	f.down.Store(true)
	var sent []tea.Msg
	m := &chatModel{
		s: f.session(t), ctx: context.Background(), out: newPrinter(), now: time.Now, st: newTUIStyles(), width: 80,
		send: func(msg tea.Msg) { sent = append(sent, msg) },
	}

	m.editor.set("hello")
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	if m.state != stateBusy || cmd == nil {
		t.Fatalf("Enter did not start a turn (state %v)", m.state)
	}
	drive(t, m, &sent, cmd) // the turn fails: nothing listens
	if m.state != stateReconnecting || len(m.queue) != 1 || m.queue[0].text != "hello" {
		t.Fatalf("after a refused connection: state %v, queue %+v; want reconnecting with the input kept", m.state, m.queue)
	}
	if v := m.View(); !strings.Contains(v, "reconnecting in") || !strings.Contains(v, "1 message kept") {
		t.Errorf("the view does not say it reconnects:\n%s", v)
	}

	// A retry that finds the server still down schedules the next one.
	_, cmd = m.Update(retryMsg{gen: m.retryGen})
	drive(t, m, &sent, cmd)
	if m.state != stateReconnecting || m.retryAttempt != 2 {
		t.Fatalf("state %v attempt %d, want still reconnecting on attempt 2", m.state, m.retryAttempt)
	}

	f.down.Store(false)
	_, cmd = m.Update(retryMsg{gen: m.retryGen})
	cmd = drive(t, m, &sent, cmd) // health is back: the kept input goes out
	drive(t, m, &sent, cmd)       // the turn streams and ends
	if m.state != stateIdle || len(m.queue) != 0 {
		t.Fatalf("state %v queue %+v, want idle and empty", m.state, m.queue)
	}
	transcript := strings.Join(m.out.take(), "\n")
	if strings.Count(transcript, "› hello") != 1 {
		t.Errorf("the input is echoed %d times, want once:\n%s", strings.Count(transcript, "› hello"), transcript)
	}
	for _, want := range []string{"reconnected to", "echo: hello", "⚙ chat_send", "— ", "1 tool call"} {
		if !strings.Contains(transcript, want) {
			t.Errorf("transcript lacks %q:\n%s", want, transcript)
		}
	}
}

func TestTUICommands(t *testing.T) {
	f := newFakeShip(t)
	m := &chatModel{s: f.session(t), ctx: context.Background(), out: newPrinter(), now: time.Now, st: newTUIStyles(), width: 80}
	var sent []tea.Msg
	for _, line := range []string{"/info", "/history 3"} {
		drive(t, m, &sent, m.input(line))
	}
	transcript := strings.Join(m.out.take(), "\n")
	if !strings.Contains(transcript, "ship 9.9.9") || !strings.Contains(transcript, "(no messages in this chat yet)") {
		t.Errorf("transcript:\n%s", transcript)
	}
	if cmd := m.input("/quit"); cmd == nil || !m.quitting || m.View() != "" {
		t.Error("/quit does not quit")
	}
}

func TestTUIDoesNotResendATurnCutMidReply(t *testing.T) {
	f := newFakeShip(t)
	f.cut.Store(true)
	m := &chatModel{s: f.session(t), ctx: context.Background(), out: newPrinter(), now: time.Now, st: newTUIStyles(), width: 80}
	var sent []tea.Msg
	m.send = func(msg tea.Msg) { sent = append(sent, msg) }
	drive(t, m, &sent, m.input("hello"))
	if m.state != stateReconnecting || len(m.queue) != 0 {
		t.Fatalf("state %v queue %+v: want reconnecting without resending a message ship may have taken", m.state, m.queue)
	}
	if transcript := strings.Join(m.out.take(), "\n"); !strings.Contains(transcript, "lost the connection during the reply") {
		t.Errorf("transcript:\n%s", transcript)
	}
}

func TestTUIShowsFilesAndQuestions(t *testing.T) {
	f := newFakeShip(t)
	m := &chatModel{s: f.session(t), ctx: context.Background(), out: newPrinter(), now: time.Now, st: newTUIStyles(), width: 80}
	var sent []tea.Msg
	m.send = func(msg tea.Msg) { sent = append(sent, msg) }
	drive(t, m, &sent, m.input("show"))
	transcript := strings.Join(m.out.take(), "\n")
	for _, want := range []string{
		"📎 chart.png (image/png, 12.3 KB) " + f.srv.URL + "/api/files/api_chat_t1/out1-0-chart.png",
		"Which **plan**?", "1. Plan A", "3. Plan C", "type the number to answer (1–3)",
	} {
		if !strings.Contains(transcript, want) {
			t.Errorf("transcript lacks %q:\n%s", want, transcript)
		}
	}
	// The number typed next is a message like any other.
	drive(t, m, &sent, m.input("2"))
	if transcript := strings.Join(m.out.take(), "\n"); !strings.Contains(transcript, "echo: 2") {
		t.Errorf("the typed answer did not go out:\n%s", transcript)
	}
}
