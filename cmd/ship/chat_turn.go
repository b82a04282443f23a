package main

import (
	"maps"
	"slices"
	"strings"

	"github.com/shipmyagent/ship/internal/shipclient"
)

// opKind says what a turnOp asks the screen to do.
type opKind int

const (
	opText       opKind = iota // append text to the reply being streamed
	opMessageEnd               // the reply message is complete; text is all of it
	opTool                     // one finished tool call; text is its line
	opRunError                 // the run failed; text says how
	opFile                     // a file the run sent; text is its line
	opQuestion                 // a question with choices; text is its lines
)

// turnOp is one thing to show, in order. The plain and the terminal UI
// both consume these, so they show a turn the same way.
type turnOp struct {
	kind opKind
	text string
	ok   bool // opTool: the call succeeded
}

// streamMsg is one reply message being assembled from its content chunks.
type streamMsg struct {
	chunks  map[int]string
	next    int // the next index to emit
	ended   bool
	emitted strings.Builder
}

// turn assembles a run's events into turnOps. Chunks are emitted in index
// order, one message at a time (a message that starts while another is
// streaming waits for it), so the text on screen is never interleaved.
type turn struct {
	msgs  map[string]*streamMsg
	order []string // ids of messages not yet fully emitted, first seen first
	held  []turnOp // tool lines waiting for the reply being streamed to end
	// after are file and question lines waiting for the tool call that
	// made them to end: they follow its tool line.
	after     []turnOp
	calls     map[string]shipclient.Event
	callOrder []string // ids of calls still running, in request order
	toolCalls int
	started   bool // task_started arrived
	done      bool
}

func newTurn() *turn {
	return &turn{msgs: map[string]*streamMsg{}, calls: map[string]shipclient.Event{}}
}

// apply takes one event and returns what to show because of it.
func (t *turn) apply(ev shipclient.Event) []turnOp {
	switch ev.Type {
	case shipclient.TypeTaskStarted:
		t.started = true
	case shipclient.TypeContent:
		m := t.message(ev.MessageID)
		if ev.Index < 0 {
			m.ended = true
		} else {
			m.chunks[ev.Index] = ev.Content
		}
		return t.flush()
	case shipclient.TypeAbilityRequest:
		t.toolCalls++
		t.calls[ev.CallID] = ev
		t.callOrder = append(t.callOrder, ev.CallID)
	case shipclient.TypeAbilityResponse:
		req, ok := t.calls[ev.CallID]
		if !ok {
			req = ev // a response without its request: show what we have
		}
		delete(t.calls, ev.CallID)
		t.callOrder = slices.DeleteFunc(t.callOrder, func(id string) bool { return id == ev.CallID })
		line, ok := toolLine(ev.AbilityID, req.Input, ev.Result)
		op := turnOp{kind: opTool, text: line, ok: ok}
		// The tool line follows the reply rather than splitting it: ship
		// streams chat_send's text while the model writes it and ends the
		// message after the call, or (when the model did not stream)
		// sends the whole text right after the call.
		if len(t.order) > 0 || (ok && ev.AbilityID == "chat_send") {
			t.held = append(t.held, op)
			t.held = append(t.held, t.releaseAfter(false)...)
			return nil
		}
		ops := append(t.releaseHeld(), op)
		return append(ops, t.releaseAfter(false)...)
	case shipclient.TypeArtifact, shipclient.TypeUI:
		op := turnOp{kind: opFile, text: fileLine(ev), ok: true}
		if ev.Type == shipclient.TypeUI {
			op = turnOp{kind: opQuestion, text: questionText(ev), ok: true}
		}
		if len(t.callOrder) > 0 || len(t.order) > 0 {
			t.after = append(t.after, op)
			return nil
		}
		return []turnOp{op}
	case shipclient.TypeTaskCompleted:
		return t.finish()
	case shipclient.TypeError:
		ops := t.finish()
		return append(ops, turnOp{kind: opRunError, text: runErrorLine(ev.ErrorCode, ev.ErrorMessage)})
	}
	return nil
}

// finish ends every message still open (the run is over, nothing more
// will come for them) and returns their remaining text.
func (t *turn) finish() []turnOp {
	if t.done {
		return nil
	}
	t.done = true
	for _, m := range t.msgs {
		m.ended = true
	}
	ops := t.flush()
	// Calls that never answered have nothing more to wait for.
	return append(ops, t.releaseAfter(true)...)
}

// running returns the tool calls that have not answered yet, in order.
func (t *turn) running() []shipclient.Event {
	out := make([]shipclient.Event, 0, len(t.callOrder))
	for _, id := range t.callOrder {
		out = append(out, t.calls[id])
	}
	return out
}

func (t *turn) message(id string) *streamMsg {
	m, ok := t.msgs[id]
	if !ok {
		m = &streamMsg{chunks: map[int]string{}}
		t.msgs[id] = m
		t.order = append(t.order, id)
	}
	return m
}

// flush emits what the head of the message queue has in order, and
// moves on to the next message each time one is complete.
func (t *turn) flush() []turnOp {
	var ops []turnOp
	for len(t.order) > 0 {
		m := t.msgs[t.order[0]]
		for {
			c, ok := m.chunks[m.next]
			if !ok {
				break
			}
			delete(m.chunks, m.next)
			m.next++
			ops = appendText(ops, m, c)
		}
		if !m.ended {
			return ops
		}
		// Chunks after a gap (one never arrived) still belong to the
		// message: show them in index order rather than lose them.
		for _, i := range slices.Sorted(maps.Keys(m.chunks)) {
			ops = appendText(ops, m, m.chunks[i])
		}
		text := m.emitted.String()
		ops = append(ops, turnOp{kind: opMessageEnd, text: text})
		delete(t.msgs, t.order[0])
		t.order = t.order[1:]
	}
	ops = append(ops, t.releaseHeld()...)
	return append(ops, t.releaseAfter(false)...)
}

// releaseHeld returns the held tool lines and forgets them.
func (t *turn) releaseHeld() []turnOp {
	ops := t.held
	t.held = nil
	return ops
}

// releaseAfter returns the file and question lines once no tool call is
// running (or when force), and forgets them.
func (t *turn) releaseAfter(force bool) []turnOp {
	if len(t.callOrder) > 0 && !force {
		return nil
	}
	ops := t.after
	t.after = nil
	return ops
}

func appendText(ops []turnOp, m *streamMsg, s string) []turnOp {
	if s == "" {
		return ops
	}
	m.emitted.WriteString(s)
	return append(ops, turnOp{kind: opText, text: s})
}
