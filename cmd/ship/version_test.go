package main

import (
	"encoding/json"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// goModRequires reads the version go.mod pins for path: what the binary
// must report linking.
func goModRequires(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == path {
			return f[1]
		}
	}
	t.Fatalf("go.mod does not require %s", path)
	return ""
}

// `ship version --json` is what a bug report pastes: the release, the Go
// version, and the SDK versions actually linked (those go.mod pins).
func TestVersionJSONNamesGoAndTheSDKs(t *testing.T) {
	code, out, errOut := runCLI(t, "version", "--json")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var v struct {
		Version, Go, Platform string
		Modules               []struct{ Path, Version string }
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if v.Version != version || v.Go != runtime.Version() || v.Platform != runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("version %q go %q platform %q", v.Version, v.Go, v.Platform)
	}
	got := map[string]string{}
	for _, m := range v.Modules {
		got[m.Path] = m.Version
	}
	for _, path := range sdkModules() {
		if want := goModRequires(t, path); got[path] != want {
			t.Errorf("%s: reported %q, go.mod pins %q", path, got[path], want)
		}
	}
}

// The text form starts with "ship <version>" (scripts read that line) and
// names the commit, or says it is unknown rather than printing nothing.
func TestVersionTextFirstLineAndCommit(t *testing.T) {
	code, out, _ := runCLI(t, "version")
	lines := strings.Split(out, "\n")
	if code != 0 || lines[0] != "ship "+version {
		t.Fatalf("exit %d, first line %q", code, lines[0])
	}
	if !strings.Contains(out, "  commit   ") || !strings.Contains(out, "github.com/go-telegram-bot-api/telegram-bot-api/v5 v5") {
		t.Errorf("output:\n%s", out)
	}
}

// The container build has no .git, so it passes the commit and time with
// -ldflags; those win over Go's VCS stamp, and a "-dirty" suffix (git
// describe --dirty) is read as uncommitted changes.
func TestVersionPrefersLinkerFlagsOverTheVCSStamp(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.99.1", Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "1111111"}, {Key: "vcs.time", Value: "2026-01-01T00:00:00Z"}, {Key: "vcs.modified", Value: "true"},
	}, Deps: []*debug.Module{
		{Path: "github.com/tmc/langchaingo", Version: "v0.1.14"},
		{Path: "github.com/tencent-connect/botgo", Version: "v0.2.1", Replace: &debug.Module{Path: "../botgo", Version: ""}},
	}}
	stamp := newVersionInfo(bi, "v1.2.3", "", "")
	if stamp.Commit != "1111111" || !stamp.Modified || stamp.BuildTime != "2026-01-01T00:00:00Z" || stamp.Go != "go1.99.1" {
		t.Errorf("from the VCS stamp: %+v", stamp)
	}
	if len(stamp.Modules) != 2 || stamp.Modules[0].Path != "github.com/tencent-connect/botgo" ||
		!strings.Contains(stamp.Modules[0].Version, "replaced by ../botgo") || stamp.Modules[1].Version != "v0.1.14" {
		t.Errorf("modules: %+v", stamp.Modules)
	}
	flags := newVersionInfo(bi, "v1.2.3", "2222222", "2026-11-27T01:00:00Z")
	if flags.Commit != "2222222" || flags.Modified || flags.BuildTime != "2026-11-27T01:00:00Z" {
		t.Errorf("from -ldflags: %+v", flags)
	}
	if d := newVersionInfo(nil, "v1.2.3", "3333333-dirty", ""); d.Commit != "3333333" || !d.Modified {
		t.Errorf("a -dirty commit: %+v", d)
	}
	var b strings.Builder
	newVersionInfo(nil, "v1.2.3", "", "").print(&b)
	if !strings.Contains(b.String(), "commit   unknown") {
		t.Errorf("no commit known:\n%s", b.String())
	}
}
