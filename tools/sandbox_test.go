package tools_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/internal/logbuf"
	"github.com/shipmyagent/ship/tools"
)

func TestSandboxRequiredWithoutBwrapRefusesEveryCommand(t *testing.T) {
	hint := "apt-get install bubblewrap"
	if runtime.GOOS != "linux" {
		hint = "needs Linux"
	}
	dir := t.TempDir()
	var logs logbuf.Buffer
	sh := tools.NewExecShell(tools.ExecShellOptions{Dir: dir, Sandbox: tools.SandboxRequired,
		Bwrap: filepath.Join(t.TempDir(), "bwrap"), Logger: zerolog.New(&logs)})
	// Known at once, before any check: ship start prints it.
	if st := sh.SandboxStatus(); !st.Refusing || st.Active || !strings.Contains(st.Reason, hint) {
		t.Errorf("status before the check: %+v", st)
	}
	res := sh.Call(context.Background(), json.RawMessage(`{"command":"touch ran"}`))
	var got execResult
	if err := json.Unmarshal([]byte(res.Content), &got); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"refuses", `tools.exec.sandbox is required`, hint} {
		if res.OK || !strings.Contains(got.Error, want) {
			t.Errorf("answer lacks %q: %s", want, res.Content)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); !os.IsNotExist(err) {
		t.Errorf("a refused command ran (stat: %v)", err)
	}
	st := sh.SandboxStatus()
	if !st.Refusing || !st.Checked || st.Active || st.Mode != tools.SandboxRequired {
		t.Errorf("status %+v", st)
	}
	if !strings.Contains(sh.Definition().Description, "refuses every command") {
		t.Errorf("the description does not say so: %s", sh.Definition().Description)
	}
	if !strings.Contains(logs.String(), `"level":"error"`) || !strings.Contains(logs.String(), "REFUSES") {
		t.Errorf("no error log line: %s", logs.String())
	}
}

func TestSandboxOffSaysUnsandboxed(t *testing.T) {
	st := tools.NewExecShell(tools.ExecShellOptions{Dir: t.TempDir(), Sandbox: tools.SandboxOff}).SandboxStatus()
	if st.Active || st.Refusing || st.Mode != tools.SandboxOff || !strings.Contains(st.Summary(), "UNSANDBOXED") {
		t.Errorf("status %+v (%s)", st, st.Summary())
	}
}
