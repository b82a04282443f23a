package server_test

import (
	"net/http"
	"strings"
	"testing"
)

func TestSendAnswersWithTheRunsTaskID(t *testing.T) {
	e := newEnv(t, setup{})
	sse := e.subscribe("/api/sse", nil)
	body := []byte(`{"userMessageId":"u-1","message":"hello","chatId":"t"}`)
	first := e.request(http.MethodPost, "/api/send", body, nil).json(t)
	taskID, _ := first["taskId"].(string)
	if first["status"] != "ok" || first["receivedMessageId"] != "u-1" || taskID == "" || len(first) != 3 {
		t.Fatalf("answer %v, want status ok, receivedMessageId u-1 and a taskId", first)
	}
	// The taskId is the run's: its events carry it, from task_started
	// (triggered by the userMessageId) to the end.
	evs := sse.untilFinal(t)
	for _, ev := range evs {
		if ev.str("taskId") != taskID {
			t.Errorf("event %s has taskId %q, want %q", ev.typ(), ev.str("taskId"), taskID)
		}
		if ev.typ() == "task_started" && ev.str("triggerMessageId") != "u-1" {
			t.Errorf("task_started triggered by %q", ev.str("triggerMessageId"))
		}
	}
	// Following the run by its taskId works too (here: its replay).
	if got := e.subscribe("/api/sse/"+taskID, map[string]string{"Last-Event-ID": evs[0].ID}).untilFinal(t); len(got) != len(evs)-1 {
		t.Errorf("/api/sse/%s replayed %d events, want %d", taskID, len(got), len(evs)-1)
	}

	// A repeated send names the first send's run, also after a restart.
	again := e.request(http.MethodPost, "/api/send", body, nil).json(t)
	if again["status"] != "duplicate" || again["taskId"] != taskID {
		t.Errorf("repeated send: %v, want duplicate with taskId %s", again, taskID)
	}
	dir := e.dir
	e.stop()
	e2 := newEnv(t, setup{dir: dir})
	if after := e2.request(http.MethodPost, "/api/send", body, nil).json(t); after["status"] != "duplicate" || after["taskId"] != taskID {
		t.Errorf("repeated send after a restart: %v, want duplicate with taskId %s", after, taskID)
	}
}

func TestEventStreamsNameEachEventOnRequest(t *testing.T) {
	e := newEnv(t, setup{})
	plain := e.subscribe("/api/sse", nil)
	named := e.subscribe("/api/sse?events=named", nil)
	byChat := e.subscribe("/api/sse/api:chat:n?events=named", nil)
	if r := e.request(http.MethodPost, "/api/send", []byte(`{"userMessageId":"n-1","message":"hi","chatId":"n"}`), nil); r.status != 200 {
		t.Fatalf("send: %d %s", r.status, r.body)
	}
	for _, ev := range plain.untilFinal(t) {
		if ev.Name != "" {
			t.Errorf("a default frame has the event line %q: seed 003's frames are data only", ev.Name)
		}
	}
	for path, c := range map[string]*sseClient{"/api/sse": named, "/api/sse/api:chat:n": byChat} {
		for _, ev := range c.untilFinal(t) {
			if ev.Name == "" || ev.Name != ev.typ() {
				t.Errorf("%s?events=named: frame with event line %q and type %q, want the type named", path, ev.Name, ev.typ())
			}
		}
	}

	// A streamed /api/execute takes it the same way.
	evs := e.streamExecute("/api/execute?events=named", `{"instructions":"hi","chatId":"x"}`)
	for _, ev := range evs {
		if ev.Name != ev.typ() {
			t.Errorf("/api/execute?events=named: frame with event line %q and type %q", ev.Name, ev.typ())
		}
	}
	if len(evs) == 0 {
		t.Error("the streamed execute sent no events")
	}

	// Any other value is a mistake, refused before anything runs.
	calls := e.fake.RequestCount()
	for _, path := range []string{"/api/sse?events=name", "/api/sse/api:chat:n?events=all"} {
		if r := e.get(path); r.status != 400 || r.errorCode(t) != "INVALID_INPUT" || !strings.Contains(r.message(t), "named") {
			t.Errorf("%s: %d %s, want 400 naming the allowed value", path, r.status, r.body)
		}
	}
	r := e.request(http.MethodPost, "/api/execute?events=yes", []byte(`{"instructions":"hi","chatId":"x"}`), map[string]string{"Accept": "text/event-stream"})
	if r.status != 400 || r.errorCode(t) != "INVALID_INPUT" {
		t.Errorf("/api/execute?events=yes: %d %s, want 400", r.status, r.body)
	}
	if e.fake.RequestCount() != calls {
		t.Error("a refused request ran a turn")
	}
}
