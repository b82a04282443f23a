package layout_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// serverSeesOfTheCore is what the HTTP API and the web console (the
// server/ tree) may import from runtime/. They reach the core through
// engine.Door and engine.View, as a platform reaches it through
// adapters.Host, so the set is what those two and their values are made
// of, and a few types that do not come from the core at all.
var serverSeesOfTheCore = []string{
	// The door and the view, and the values that pass through them.
	"runtime/engine",  // Door, View, Decider, ToolsReport, RefusalError
	"runtime/ingress", // Submission, Ticket, Outcome and its refusals
	"runtime/events",  // Event, Subscription
	"runtime/chat",    // log entries, chat keys, the api channel's name
	"runtime/turn",    // the turn a submission carries, a run's tool calls
	// Register takes the api channel's dispatcher as it takes a
	// platform's: a dispatch.Dispatcher.
	"runtime/dispatch",
	// A leaf of ship: the approvals the view lists, the decisions'
	// refusals, the verdicts and rules of the tools report, and the
	// narrowing a request's "tools" parses to.
	"runtime/policy",
	// A request's llmConfig is checked by the rules the model calls use
	// (llm.ValidateCallOptions) before it is submitted.
	"runtime/llm",
	// Door.Answer takes who answers a question as a
	// questions.Answerer.
	"runtime/questions",
	// Not the core, but what the binary hands the server beside it: the
	// MCP servers' status, the scheduled tasks (server.TaskService), and
	// where the files that log entries list are stored.
	"runtime/mcp",
	"runtime/tasks",
	"runtime/media",
}

// TestServerSeesTheCoreThroughTheDoorAndTheView keeps the HTTP API and
// the console from going around the door: they import from runtime/ only
// the packages of the door, the view and their values, never the queue,
// the agent, the journal or the store themselves.
func TestServerSeesTheCoreThroughTheDoorAndTheView(t *testing.T) {
	checked := 0
	for name, p := range graph(t) {
		if !under(name, "server") {
			continue
		}
		checked++
		for _, d := range p.direct {
			if under(d, "runtime") && !slices.Contains(serverSeesOfTheCore, d) {
				t.Errorf("%s imports %s; the server sees the core through engine.Door and engine.View (and only %v)", name, d, serverSeesOfTheCore)
			}
		}
	}
	if checked < 2 {
		t.Fatalf("found only %d packages under server/", checked)
	}
}

// componentTypes are the engine's parts. No exported method of Engine
// returns one: whoever holds a part can go around the door.
var componentTypes = []string{
	"*chat.Store", "chat.Log", "*queue.Queue", "*ingress.Queue", "*ingress.Ingress", "*agent.Runtime",
	"*journal.Journal", "journal.Recorder", "*policy.Store", "*policy.Policy", "*dispatch.Registry",
	"*dispatch.Deliverer", "*events.Bus",
}

// componentNames are the getters the Engine had; none may come back.
var componentNames = []string{"Store", "Queue", "Ingress", "Runtime", "Journal", "Approvals", "Policy", "Dispatchers", "Events", "Registry"}

// TestEngineHandsOutNoPart keeps the Engine a narrow core: it answers
// (the View), takes work (the Door, adapters.Host) and starts and stops,
// but hands none of its parts out.
func TestEngineHandsOutNoPart(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}|{{join .GoFiles \" \"}}", module+"/runtime/engine").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dir, files, _ := strings.Cut(strings.TrimSpace(string(out)), "|")
	methods := 0
	for _, file := range strings.Fields(files) {
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, file), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || !fn.Name.IsExported() || receiverName(fn) != "Engine" {
				continue
			}
			methods++
			if slices.Contains(componentNames, fn.Name.Name) {
				t.Errorf("%s: Engine.%s hands out a part of the core; offer what its users need on Door or View", file, fn.Name.Name)
			}
			if fn.Type.Results == nil {
				continue
			}
			for _, res := range fn.Type.Results.List {
				if typ := types.ExprString(res.Type); slices.Contains(componentTypes, typ) {
					t.Errorf("%s: Engine.%s returns %s, a part of the core; offer what its users need on Door or View", file, fn.Name.Name, typ)
				}
			}
		}
	}
	if methods < 10 {
		t.Fatalf("found only %d exported methods of Engine", methods)
	}
}

// receiverName is the type name of fn's receiver, without a pointer.
func receiverName(fn *ast.FuncDecl) string {
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
