package events

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestPublishNeverBlocksAndCutsOffASlowSubscriber(t *testing.T) {
	b := NewBus(16)
	slow, _ := b.Subscribe(nil, 0, 2)
	fast, _ := b.Subscribe(nil, 0, 100)
	for i := 0; i < 10; i++ {
		b.Publish(Event{Type: TypeContent, TaskID: "t"})
	}
	if !slow.Overflowed() {
		t.Fatal("a subscriber that fell 10 behind with room for 2 was not cut off")
	}
	n := 0
	for range slow.C { // closed, with what it had room for
		n++
	}
	if n != 2 {
		t.Errorf("slow subscriber got %d events before being cut off, want 2", n)
	}
	if len(fast.C) != 10 || fast.Overflowed() {
		t.Errorf("fast subscriber has %d events", len(fast.C))
	}
	if b.Subscribers() != 1 {
		t.Errorf("%d subscribers left, want 1", b.Subscribers())
	}
	fast.Close()
	fast.Close() // twice is fine
}

func TestFilterAndReplayAfterLastEventID(t *testing.T) {
	b := NewBus(4)
	var ids []uint64
	for i := 0; i < 6; i++ {
		key := "a"
		if i%2 == 1 {
			key = "b"
		}
		ids = append(ids, b.Publish(Event{Type: TypeContent, ChatKey: key}).ID)
	}
	onlyA := func(e Event) bool { return e.ChatKey == "a" }
	s, complete := b.Subscribe(onlyA, ids[2], 8)
	if !complete {
		t.Error("replay from an id still in the window reported as incomplete")
	}
	if len(s.C) != 1 || (<-s.C).ID != ids[4] {
		t.Errorf("replay after id %d for chat a: want only event %d", ids[2], ids[4])
	}
	if _, complete := b.Subscribe(nil, ids[0], 8); complete {
		t.Error("replay from an id older than the window must say events were lost")
	}
}

func TestEventJSONCarriesExactlyItsTypesFields(t *testing.T) {
	cases := []struct {
		e    Event
		want string
	}{
		{Event{Type: TypeContent, TaskID: "t", MessageID: "m", Index: 0, Content: "", Timestamp: 5},
			`{"content":"","index":0,"messageId":"m","taskId":"t","timestamp":5,"type":"content"}`},
		{Event{Type: TypeTaskStarted, TaskID: "t", TriggerMessageID: "u", TaskName: "n", ChatKey: "k", Timestamp: 1},
			`{"chatKey":"k","taskId":"t","taskName":"n","timestamp":1,"triggerMessageId":"u","type":"task_started"}`},
		{Event{Type: TypeAbilityResponse, TaskID: "t", CallID: "c", AbilityID: "chat_send", Result: &InvokeResult{Type: "error", Error: "x"}, Timestamp: 1},
			`{"abilityId":"chat_send","callId":"c","result":{"type":"error","error":"x"},"taskId":"t","timestamp":1,"type":"ability_response"}`},
		{Event{Type: TypeTaskCompleted, TaskID: "t", DurationMS: 12, Timestamp: 1},
			`{"durationMs":12,"taskId":"t","timestamp":1,"type":"task_completed"}`},
		{Event{Type: TypeError, ErrorCode: "E", ErrorMessage: "m", Timestamp: 1},
			`{"errorCode":"E","errorMessage":"m","timestamp":1,"type":"error"}`},
	}
	for _, c := range cases {
		b, err := json.Marshal(c.e)
		if err != nil || string(b) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.e.Type, b, c.want)
		}
	}
	if !(Event{Type: TypeError}).Final() || !(Event{Type: TypeTaskCompleted}).Final() || (Event{Type: TypeContent}).Final() {
		t.Error("Final is wrong")
	}
}

// The replay window keeps the newest events in order however often it
// has wrapped around.
func TestReplayKeepsTheNewestEventsInOrderAfterWrapping(t *testing.T) {
	b := NewBus(3)
	var ids []uint64
	for range 11 {
		ids = append(ids, b.Publish(Event{Type: TypeContent}).ID)
	}
	s, complete := b.Subscribe(nil, ids[7], 8)
	if !complete {
		t.Error("replay from an id still in the window reported as incomplete")
	}
	var got []uint64
	for len(s.C) > 0 {
		got = append(got, (<-s.C).ID)
	}
	if want := ids[8:]; !slices.Equal(got, want) {
		t.Errorf("replayed %v, want %v", got, want)
	}
}
