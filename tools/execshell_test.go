package tools_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shipmyagent/ship/tools"
)

// execResult is exec_shell's answer as the model reads it.
type execResult struct {
	Success            bool    `json:"success"`
	Error              string  `json:"error"`
	Warning            string  `json:"warning"`
	ExitCode           int     `json:"exitCode"`
	Stdout             string  `json:"stdout"`
	Stderr             string  `json:"stderr"`
	StdoutCutBytes     int64   `json:"stdoutCutBytes"`
	StderrCutBytes     int64   `json:"stderrCutBytes"`
	TimedOut           bool    `json:"timedOut"`
	Cancelled          bool    `json:"cancelled"`
	Signal             string  `json:"signal"`
	TimeoutMs          int64   `json:"timeoutMs"`
	TimeoutClamped     bool    `json:"timeoutClamped"`
	RequestedTimeoutMs float64 `json:"requestedTimeoutMs"`
}

func TestExecShellRefusesBadArgumentsWithoutRunning(t *testing.T) {
	dir := t.TempDir()
	sh := tools.NewExecShell(tools.ExecShellOptions{Dir: dir})
	bad := []string{
		`[1]`, `"touch ran"`, `null`, `{}`, `not json`,
		`{"command":""}`, `{"command":"   \n"}`, `{"command":5}`,
		`{"command":"touch ran","timeoutMs":0}`, `{"command":"touch ran","timeoutMs":-5}`,
		`{"command":"touch ran","timeoutMs":"soon"}`, `{"command":"touch ran\u0000x"}`,
	}
	for _, args := range bad {
		res := sh.Call(context.Background(), json.RawMessage(args))
		var got execResult
		if err := json.Unmarshal([]byte(res.Content), &got); err != nil {
			t.Fatalf("%s: result %q is not JSON: %v", args, res.Content, err)
		}
		if res.OK || got.Success || !strings.HasPrefix(got.Error, "arguments") {
			t.Errorf("%s: %+v, want a failure about the arguments", args, res)
		}
		if _, err := tools.ExecShellCommand(json.RawMessage(args)); err == nil {
			t.Errorf("%s: ExecShellCommand accepted it", args)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); !os.IsNotExist(err) {
		t.Errorf("a refused command ran (stat: %v)", err)
	}
}

func TestExecShellCommandIsWhatRuns(t *testing.T) {
	for args, want := range map[string]string{
		`{"command":"ls -la | grep x"}`:                "ls -la | grep x",
		`{"command":"  rm -rf build  ","timeoutMs":5}`: "  rm -rf build  ",
		`{"command":"echo 1","timeoutMs":12.0}`:        "echo 1",
	} {
		got, err := tools.ExecShellCommand(json.RawMessage(args))
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", args, got, err, want)
		}
	}
}

func TestExecShellDefinitionTellsTheLimits(t *testing.T) {
	dir := t.TempDir()
	def := tools.NewExecShell(tools.ExecShellOptions{Dir: dir, MaxTimeout: 2 * time.Minute, MaxOutput: 1000}).Definition()
	if def.Name != tools.ExecShellName {
		t.Errorf("name %q", def.Name)
	}
	for _, want := range []string{dir, "sh -c", "30s", "2m0s", "1000 bytes"} {
		if !strings.Contains(def.Description, want) {
			t.Errorf("description lacks %q: %s", want, def.Description)
		}
	}
	params, _ := json.Marshal(def.Parameters)
	for _, want := range []string{`"command"`, `"timeoutMs"`, `"required":["command"]`, `"maximum":120000`} {
		if !strings.Contains(string(params), want) {
			t.Errorf("parameters lack %s: %s", want, params)
		}
	}
}
