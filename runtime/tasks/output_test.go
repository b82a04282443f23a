package tasks_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/runtime/tasks"
)

func TestParseReadsAnOutputSchema(t *testing.T) {
	yamlForm := "---\ncron: \"0 9 * * *\"\nchatKey: api:chat:a\noutputSchema:\n  type: object\n  required: [ok]\n---\nReport.\n"
	task, err := tasks.Parse("report", []byte(yamlForm))
	if err != nil {
		t.Fatal(err)
	}
	if task.OutputSchema != `{"required":["ok"],"type":"object"}` {
		t.Errorf("outputSchema read as %s", task.OutputSchema)
	}
	// What Format writes reads back the same.
	data, err := task.Format()
	if err != nil {
		t.Fatal(err)
	}
	if back, err := tasks.Parse("report", data); err != nil || back != task {
		t.Errorf("round trip: %+v, %v\nfile:\n%s", back, err, data)
	}
	for _, tc := range []struct{ name, head, want string }{
		{"not a schema", `outputSchema: {"minLength": "x"}`, "invalid output schema"},
		{"both", "outputSchema: {\"type\": \"object\"}\noutputSchemaFile: s.json", "give one of them"},
		{"outside", "outputSchemaFile: ../s.json", "inside the project folder"},
		{"absolute", "outputSchemaFile: /etc/s.json", "inside the project folder"},
	} {
		file := "---\ncron: \"0 9 * * *\"\nchatKey: api:chat:a\n" + tc.head + "\n---\nReport.\n"
		if _, err := tasks.Parse("report", []byte(file)); !errors.Is(err, tasks.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrInvalid saying %q", tc.name, err, tc.want)
		}
	}
}

// A schema file is read when the task fires: a broken one stops the run
// before it starts, and the task's status says why.
func TestABrokenSchemaFileStopsTheRun(t *testing.T) {
	e := newEnv(t, setup{})
	if err := os.WriteFile(filepath.Join(e.dir, "report.schema.json"), []byte(`{"type": `), 0o600); err != nil {
		t.Fatal(err)
	}
	e.writeTask("report", "---\ncron: \"0 9 * * *\"\nchatKey: api:chat:reports\noutputSchemaFile: report.schema.json\n---\nReport.\n", e.clock.Now())
	if _, err := e.sched.RunNow(context.Background(), "report"); err == nil || !strings.Contains(err.Error(), "outputSchemaFile") {
		t.Fatalf("RunNow = %v, want an error naming outputSchemaFile", err)
	}
	e.idle()
	if n := e.model.RequestCount(); n != 0 {
		t.Errorf("the run went ahead (%d model calls)", n)
	}
	if st := e.status("report"); st.LastStatus != tasks.StatusFailed || !strings.Contains(st.LastResult, "outputSchemaFile") {
		t.Errorf("status %+v", st)
	}
}
