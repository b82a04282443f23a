package layout_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// platformChannels are the channel constants of the platforms (package
// chat) and the names they stand for.
var platformChannels = map[string]bool{"ChannelTelegram": true, "ChannelFeishu": true, "ChannelQQ": true}

var platformNames = map[string]bool{"telegram": true, "feishu": true, "lark": true, "qq": true}

// platformsNamed are the packages under runtime/ that may name a platform:
// chat defines the channel names as data (chat keys, log entries), and
// config reads each platform's section of ship.json.
var platformsNamed = []string{"runtime/chat", "runtime/config"}

// TestCoreNamesNoPlatform keeps what differs between platforms in the
// adapters: the core asks a chat's dispatcher what it can do (the optional
// interfaces of runtime/dispatch) and never decides by the platform's name.
// A platform channel constant or a platform's name as a string literal in
// the code (tests excluded) under runtime/ is an error.
func TestCoreNamesNoPlatform(t *testing.T) {
	root := "../.." // the module, from this package's directory (as TestRunStateIsOneValue)
	checked := 0
	err := filepath.WalkDir(filepath.Join(root, "runtime"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			for _, p := range platformsNamed {
				if rel == p {
					return filepath.SkipDir
				}
			}
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		checked++
		for _, m := range platformMentions(t, path) {
			t.Errorf("%s: %s; ask the chat's dispatcher instead (a capability in runtime/dispatch)", rel, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Fatalf("checked only %d files under runtime/", checked)
	}
}

// platformMentions lists where file uses a platform channel constant or a
// platform's name as a whole string literal.
func platformMentions(t *testing.T, file string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parsing %s: %v", file, err)
	}
	var found []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if platformChannels[n.Sel.Name] {
				found = append(found, "line "+strconv.Itoa(fset.Position(n.Pos()).Line)+" uses "+n.Sel.Name)
			}
		case *ast.BasicLit:
			if n.Kind != token.STRING {
				return true
			}
			if s, err := strconv.Unquote(n.Value); err == nil && platformNames[strings.ToLower(s)] {
				found = append(found, "line "+strconv.Itoa(fset.Position(n.Pos()).Line)+" names "+n.Value)
			}
		}
		return true
	})
	return found
}

// TestRunStateIsOneValue keeps a run's state in one place: the context
// carries one dispatch.Run, not a key per piece. The two others are not
// run state but one call's (a delivery's wire hook; what a model call hands
// its HTTP doer: top_p, the tap of a streamed Claude answer).
func TestRunStateIsOneValue(t *testing.T) {
	var found []string
	for _, dir := range []string{"../../runtime", "../../tools"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for range strings.Count(string(b), "context.WithValue(") {
				found = append(found, strings.TrimPrefix(path, "../../"))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(found) > 3 {
		t.Errorf("context.WithValue is called in %v; keep a run's state in dispatch.Run (at most 3 calls)", found)
	}
}
