package server_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/tasks"
	"github.com/shipmyagent/ship/server"
)

// tasksEnv serves a project whose task folder holds a valid task and an
// invalid one, with the real scheduler behind /api/tasks.
func tasksEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	folder := filepath.Join(dir, ".ship", "tasks")
	if err := os.MkdirAll(folder, 0o700); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"report": "---\ncron: \"0 9 * * *\"\ntimezone: UTC\nchatKey: api:chat:reports\n---\nWrite the report.\n",
		"broken": "---\ncron: \"0 9 * *\"\nchatKey: api:chat:reports\n---\nNever.\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(folder, name+".md"), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return newEnv(t, setup{dir: dir, tasks: func(eng *engine.Engine) server.TaskService {
		s, err := tasks.New(tasks.Options{Dir: folder, Submitter: eng, History: eng, Dispatchers: eng})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}})
}

func listTasks(t *testing.T, e *env) map[string]tasks.Status {
	t.Helper()
	r := e.get("/api/tasks")
	if r.status != http.StatusOK {
		t.Fatalf("GET /api/tasks: %d %s", r.status, r.body)
	}
	var body struct {
		Tasks []tasks.Status `json:"tasks"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatal(err)
	}
	out := map[string]tasks.Status{}
	for _, s := range body.Tasks {
		out[s.Name] = s
	}
	return out
}

func TestTasksListAndRun(t *testing.T) {
	e := tasksEnv(t)
	list := listTasks(t, e)
	report, broken := list["report"], list["broken"]
	if len(list) != 2 || report.Error != "" || !report.Enabled || report.Cron != "0 9 * * *" || report.Timezone != "UTC" ||
		report.ChatKey != "api:chat:reports" || report.NextRun.IsZero() {
		t.Errorf("report = %+v", report)
	}
	if !strings.Contains(broken.Error, `cron "0 9 * *"`) || !broken.NextRun.IsZero() {
		t.Errorf("broken = %+v", broken)
	}

	r := e.request(http.MethodPost, "/api/tasks/report/run", []byte("{}"), nil)
	var queued struct{ Status, Name, TaskID string }
	if err := json.Unmarshal(r.body, &queued); r.status != http.StatusAccepted || err != nil || queued.Status != "queued" ||
		!strings.HasPrefix(queued.TaskID, "task-report-run-") {
		t.Fatalf("POST run: %d %s", r.status, r.body)
	}
	waitFor(t, "the run's end", func() bool { return listTasks(t, e)["report"].LastStatus == tasks.StatusOK })
	if got := listTasks(t, e)["report"]; got.LastRunID != queued.TaskID || got.LastResult != "replied in api:chat:reports (1 message)" {
		t.Errorf("after the run: %+v", got)
	}
	msgs := e.get("/api/chats/api:chat:reports/messages")
	if !strings.Contains(string(msgs.body), `echo: [scheduled task report, run by hand]\nWrite the report.`) ||
		!strings.Contains(string(msgs.body), `"channel":"scheduler"`) {
		t.Errorf("chat log: %s", msgs.body)
	}

	for _, tc := range []struct {
		path   string
		status int
		code   string
	}{
		{"/api/tasks/nope/run", http.StatusNotFound, "NOT_FOUND"},
		{"/api/tasks/broken/run", http.StatusConflict, "CONFLICT"},
		{"/api/tasks/Bad.Name/run", http.StatusBadRequest, "INVALID_INPUT"},
	} {
		r := e.request(http.MethodPost, tc.path, []byte("{}"), nil)
		if r.status != tc.status || r.errorCode(t) != tc.code {
			t.Errorf("POST %s: %d %s", tc.path, r.status, r.body)
		}
	}
}

func TestTasksWithoutAScheduler(t *testing.T) {
	e := newEnv(t, setup{})
	if r := e.get("/api/tasks"); r.status != http.StatusOK || strings.TrimSpace(string(r.body)) != `{"tasks":[]}` {
		t.Errorf("GET /api/tasks: %d %s", r.status, r.body)
	}
	if r := e.request(http.MethodPost, "/api/tasks/report/run", []byte("{}"), nil); r.status != http.StatusNotFound {
		t.Errorf("POST run: %d %s", r.status, r.body)
	}
}
