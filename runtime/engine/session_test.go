package engine_test

import (
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/events"
)

// sessionPlane reads the session_* and dispatch_* events of chatKey from
// sub until it has n of them.
func sessionPlane(t *testing.T, sub <-chan events.Event, n int) []events.Event {
	t.Helper()
	var got []events.Event
	for len(got) < n {
		select {
		case e := <-sub:
			got = append(got, e)
		case <-time.After(10 * time.Second): // hang guard
			t.Fatalf("only %d session-plane events: %+v", len(got), got)
		}
	}
	return got
}

func isSessionPlane(e events.Event) bool {
	switch e.Type {
	case events.TypeSessionCreated, events.TypeSessionResumed, events.TypeDispatchStarted, events.TypeDispatchCompleted:
		return true
	}
	return false
}

// TestSessionPlaneEventsOfANewChatAndAResumedOne: a chat's first turn
// builds its session (session_created) inside dispatch_started /
// dispatch_completed; its second turn finds it in memory (no session
// event); after a restart the session is resumed from the log with the
// messages it held.
func TestSessionPlaneEventsOfANewChatAndAResumedOne(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, harnessOptions{dir: dir, handler: fakeopenai.EchoChatSend})
	key := chatKeyOf("1")
	sub, _ := h.engine.Subscribe(func(e events.Event) bool { return e.ChatKey == key && isSessionPlane(e) }, 0, 64)
	defer sub.Close()

	first := h.ask("1", "m1", "hello")
	if first.Err != nil {
		t.Fatal(first.Err)
	}
	got := sessionPlane(t, sub.C, 3)
	want := []string{events.TypeDispatchStarted, events.TypeSessionCreated, events.TypeDispatchCompleted}
	for i, e := range got {
		if e.Type != want[i] || e.TaskID == "" || e.TaskID != got[0].TaskID {
			t.Fatalf("event %d is %s of run %q, want %s of the turn's run: %+v", i, e.Type, e.TaskID, want[i], got)
		}
	}
	if d := got[0].Dispatch; d == nil || d.Agent != "default" || d.Model == "" {
		t.Fatalf("dispatch_started = %+v, want the default agent and its model", got[0].Dispatch)
	}
	if d := got[2].Dispatch; d == nil || d.Outcome != "ok" || d.ToolCalls != 1 {
		t.Fatalf("dispatch_completed = %+v, want ok with its one chat_send", got[2].Dispatch)
	}
	if s := got[1].Session; s == nil || s.Agent != "default" || s.Restored != 0 {
		t.Fatalf("session_created = %+v", got[1].Session)
	}

	if o := h.ask("1", "m2", "again"); o.Err != nil {
		t.Fatal(o.Err)
	}
	got = sessionPlane(t, sub.C, 2)
	if got[0].Type != events.TypeDispatchStarted || got[1].Type != events.TypeDispatchCompleted {
		t.Fatalf("a chat whose session is in memory: %s, %s; want only the dispatch events", got[0].Type, got[1].Type)
	}
	h.close()

	// A restart: the session comes back from the log (2 turns of a
	// message and its reply).
	h2 := newHarness(t, harnessOptions{dir: dir, handler: fakeopenai.EchoChatSend})
	sub2, _ := h2.engine.Subscribe(func(e events.Event) bool { return e.ChatKey == key && isSessionPlane(e) }, 0, 64)
	defer sub2.Close()
	if o := h2.ask("1", "m3", "back"); o.Err != nil {
		t.Fatal(o.Err)
	}
	got = sessionPlane(t, sub2.C, 3)
	if got[1].Type != events.TypeSessionResumed || got[1].Session == nil || got[1].Session.Restored != 4 {
		t.Fatalf("after a restart: %s %+v, want session_resumed with 4 messages restored", got[1].Type, got[1].Session)
	}
}
