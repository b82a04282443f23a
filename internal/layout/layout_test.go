// Package layout_test keeps the package graph the way docs/architecture.md draws it:
// the core under runtime/ knows nothing of platforms, tools or the HTTP
// server; platforms see the core only through the adapters contract and the
// ingress and dispatch types; the queue knows nothing of what it carries.
package layout_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/shipmyagent/ship"

// pkg is one package of the module with its imports.
type pkg struct {
	direct []string // module packages it imports itself
	deps   []string // module packages it depends on, transitively
}

// graph lists the module's packages (tests excluded: they may wire
// anything together).
func graph(t *testing.T) map[string]pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .Deps \" \"}}", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	ours := func(list string) []string {
		var keep []string
		for _, p := range strings.Fields(list) {
			if p == module || strings.HasPrefix(p, module+"/") {
				keep = append(keep, strings.TrimPrefix(strings.TrimPrefix(p, module), "/"))
			}
		}
		return keep
	}
	g := map[string]pkg{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.Split(line, "|")
		if len(parts) != 3 {
			t.Fatalf("unexpected go list line %q", line)
		}
		name := strings.TrimPrefix(strings.TrimPrefix(parts[0], module), "/")
		g[name] = pkg{direct: ours(parts[1]), deps: ours(parts[2])}
	}
	if len(g) < 10 {
		t.Fatalf("go list found only %d packages", len(g))
	}
	return g
}

func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

func TestCoreImportsNoPlatformToolOrServer(t *testing.T) {
	for name, p := range graph(t) {
		if !under(name, "runtime") {
			continue
		}
		for _, d := range p.deps {
			if under(d, "adapters") || under(d, "tools") || under(d, "server") {
				t.Errorf("%s depends on %s", name, d)
			}
		}
	}
}

func TestPlatformsSeeOnlyTheContract(t *testing.T) {
	// adapters/split and adapters/markdown cut and render reply text for
	// any platform; they know none.
	allowed := []string{"adapters", "adapters/split", "adapters/markdown", "runtime/ingress", "runtime/dispatch", "runtime/chat", "runtime/config"}
	g := graph(t)
	for _, name := range []string{"adapters/telegram", "adapters/feishu", "adapters/qq"} {
		p, ok := g[name]
		if !ok {
			t.Fatalf("package %s not found", name)
		}
		for _, d := range p.direct {
			if !slices.Contains(allowed, d) {
				t.Errorf("%s imports %s; platforms may import only %v", name, d, allowed)
			}
		}
		for _, d := range p.deps {
			if under(d, "runtime/engine") || under(d, "server") || under(d, "tools") {
				t.Errorf("%s depends on %s", name, d)
			}
		}
	}
}

func TestQueueKnowsNothingOfWhatItCarries(t *testing.T) {
	p, ok := graph(t)["runtime/queue"]
	if !ok {
		t.Fatal("package runtime/queue not found")
	}
	for _, d := range p.deps {
		if under(d, "runtime/agent") || under(d, "runtime/chat") {
			t.Errorf("runtime/queue depends on %s", d)
		}
	}
}

func TestPolicyStandsAlone(t *testing.T) {
	p, ok := graph(t)["runtime/policy"]
	if !ok {
		t.Fatal("package runtime/policy not found")
	}
	for _, d := range p.deps {
		// runtime/records is a leaf: the seam through which the approvals
		// store keeps its state in a cluster.
		if d != "runtime/records" {
			t.Errorf("runtime/policy depends on %s; it must know no tool, platform or other part of ship", d)
		}
	}
}

// TestRecordsIsALeaf keeps runtime/records (the shared-state seam the
// stores use) free of the rest of ship, so any store may use it.
func TestRecordsIsALeaf(t *testing.T) {
	p, ok := graph(t)["runtime/records"]
	if !ok {
		t.Fatal("package runtime/records not found")
	}
	if len(p.deps) != 0 {
		t.Errorf("runtime/records depends on %v; it must be a leaf", p.deps)
	}
}

// TestShipDoesNotUseTheBrowserHelper keeps internal/browser (and chromedp
// with it) a test and tooling helper: the ship binary never links it.
func TestShipDoesNotUseTheBrowserHelper(t *testing.T) {
	ship, ok := graph(t)["cmd/ship"]
	if !ok {
		t.Fatal("package cmd/ship not found")
	}
	if slices.Contains(ship.deps, "internal/browser") {
		t.Error("cmd/ship depends on internal/browser, which only tests and bench programs may use")
	}
}

// TestTheTurnIsALeaf keeps runtime/turn importable by every part of ship:
// it is the one value a turn is carried as, so it may depend on nothing.
func TestTheTurnIsALeaf(t *testing.T) {
	p, ok := graph(t)["runtime/turn"]
	if !ok {
		t.Fatal("package runtime/turn not found")
	}
	if len(p.deps) != 0 {
		t.Errorf("runtime/turn depends on %v; it must be a leaf", p.deps)
	}
}

// TestIngressAndJournalCarryTheTurnWhole keeps the front door and the
// pending-work journal from growing a copy of the turn's fields: they hold
// a turn.Turn and know nothing of the agent, the models or the policy.
func TestIngressAndJournalCarryTheTurnWhole(t *testing.T) {
	g := graph(t)
	for _, name := range []string{"runtime/ingress", "runtime/journal"} {
		p, ok := g[name]
		if !ok {
			t.Fatalf("package %s not found", name)
		}
		for _, d := range p.deps {
			if under(d, "runtime/agent") || under(d, "runtime/llm") || under(d, "runtime/policy") {
				t.Errorf("%s depends on %s", name, d)
			}
		}
	}
}
