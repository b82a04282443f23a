//go:build linux

package tools_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shipmyagent/ship/tools"
)

// TestExecShellUpdateAppliesToTheNextCall: a reload of tools.exec changes
// the output cap, the default timeout and the secrets hidden for the calls
// that follow, and a secret known before stays hidden.
func TestExecShellUpdateAppliesToTheNextCall(t *testing.T) {
	sh := unsandboxed(tools.ExecShellOptions{Dir: t.TempDir(), Secrets: []string{"old-secret-123"}})
	ctx := context.Background()
	_, before, err := call(ctx, sh, "echo 0123456789abcdef", 0)
	if err != nil {
		t.Fatal(err)
	}
	if before.StdoutCutBytes != 0 || before.TimeoutMs != tools.DefaultExecTimeout.Milliseconds() {
		t.Fatalf("before the update: %+v", before)
	}

	sh.Update(tools.ExecShellOptions{MaxOutput: 4, DefaultTimeout: 7 * time.Second, Sandbox: tools.SandboxOff,
		Secrets: []string{"new-secret-456"}})
	_, after, err := call(ctx, sh, "echo 0123456789abcdef", 0)
	if err != nil {
		t.Fatal(err)
	}
	if after.StdoutCutBytes == 0 || after.TimeoutMs != 7000 {
		t.Errorf("after the update: %+v, want the output cut at 4 bytes and a 7 s timeout", after)
	}
	if !strings.Contains(sh.Definition().Description, "default 7s") {
		t.Errorf("the definition still tells the old timeout: %s", sh.Definition().Description)
	}
	sh.Update(tools.ExecShellOptions{Sandbox: tools.SandboxOff})
	_, got, err := call(ctx, sh, "echo old-secret-123 new-secret-456", 0)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got.Stdout, "secret") {
		t.Errorf("a secret was shown after updates: %q", got.Stdout)
	}
}
