package cluster

import (
	"testing"
	"time"

	"github.com/shipmyagent/ship/runtime/events"
)

func TestEventsOfOneReplicaReachTheOthersOnce(t *testing.T) {
	a := startNode(t, "a", nil)
	b := startNode(t, "b", a)
	busA, busB := events.NewBus(0), events.NewBus(0)
	for _, x := range []struct {
		n   *Node
		bus *events.Bus
	}{{a, busA}, {b, busB}} {
		stop, err := x.n.RelayEvents(x.bus)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
	}
	subA, _ := busA.Subscribe(nil, 0, 16)
	subB, _ := busB.Subscribe(nil, 0, 16)
	defer subA.Close()
	defer subB.Close()
	// Core NATS subscriptions propagate asynchronously: publish until b
	// hears one, then check that exactly the later ones arrive.
	deadline := time.After(10 * time.Second)
	for heard := false; !heard; {
		busA.Publish(events.Event{Type: events.TypeTaskStarted, TaskID: "warmup", ChatKey: "api:chat:x"})
		<-subA.C
		select {
		case e := <-subB.C:
			heard = e.TaskID == "warmup"
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatal("b never heard a's events")
		}
	}
	for range len(subB.C) {
		<-subB.C
	}
	busA.Publish(events.Event{Type: events.TypeContent, TaskID: "t1", ChatKey: "api:chat:x", Content: "hello", Index: 0})
	local := <-subA.C
	if local.Replica != "a" {
		t.Errorf("local event replica = %q, want a", local.Replica)
	}
	remote := <-subB.C
	if remote.TaskID != "t1" || remote.Content != "hello" || remote.Replica != "a" || remote.ChatKey != "api:chat:x" {
		t.Errorf("b got %+v", remote)
	}
	// b's own event is b's, and a hears it; b does not hear it twice.
	busB.Publish(events.Event{Type: events.TypeTaskCompleted, TaskID: "t2"})
	if e := <-subB.C; e.Replica != "b" || e.TaskID != "t2" {
		t.Errorf("b's own event: %+v", e)
	}
	if e := <-subA.C; e.Replica != "b" || e.TaskID != "t2" {
		t.Errorf("a got %+v", e)
	}
	select {
	case e := <-subB.C:
		t.Errorf("b heard an event twice: %+v", e)
	case <-time.After(200 * time.Millisecond):
	}
}
