package server_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"gopkg.in/yaml.v3"

	"github.com/shipmyagent/ship/adapters/feishu"
	"github.com/shipmyagent/ship/adapters/qq"
	"github.com/shipmyagent/ship/adapters/telegram"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/tasks"
	"github.com/shipmyagent/ship/runtime/usage"
	"github.com/shipmyagent/ship/server"
)

// openAPIPath is the API's description, next to the prose of docs/api.md.
var openAPIPath = filepath.Join("..", "docs", "openapi.yaml")

// httpMethods are the operation keys of an OpenAPI path item.
var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// loadOpenAPI reads docs/openapi.yaml as plain JSON-like values.
func loadOpenAPI(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile(openAPIPath)
	if err != nil {
		t.Fatalf("reading the OpenAPI description: %v", err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("parsing %s: %v", openAPIPath, err)
	}
	return doc
}

func object(t *testing.T, v any, what string) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s is not an object: %v", what, v)
	}
	return m
}

// documented returns "METHOD /path" for every operation of the description.
func documented(t *testing.T, doc map[string]any) []string {
	t.Helper()
	var ops []string
	for path, item := range object(t, doc["paths"], "paths") {
		for method := range object(t, item, path) {
			if slices.Contains(httpMethods, method) {
				ops = append(ops, strings.ToUpper(method)+" "+path)
			}
		}
	}
	slices.Sort(ops)
	return ops
}

// served returns "METHOD /path" for every route the server registers, in
// OpenAPI's spelling ("{path...}" is "{path}"), and the platforms' webhooks
// the binary hands it.
func served() []string {
	var ops []string
	for _, r := range server.Routes() {
		ops = append(ops, r.Method+" "+strings.ReplaceAll(r.Pattern, "...}", "}"))
	}
	for _, p := range []string{telegram.WebhookPath, feishu.WebhookPath, qq.WebhookPath} {
		ops = append(ops, http.MethodPost+" "+p)
	}
	slices.Sort(ops)
	return ops
}

// TestOpenAPIDescribesEveryRoute holds docs/openapi.yaml to the server: a
// route added without its description, or a described route that is gone,
// fails here. The console's HTML pages are left out by design (see the
// file's header).
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	doc := loadOpenAPI(t)
	want, got := served(), documented(t, doc)
	for _, op := range want {
		if !slices.Contains(got, op) {
			t.Errorf("%s is served but not described in docs/openapi.yaml", op)
		}
	}
	for _, op := range got {
		if !slices.Contains(want, op) {
			t.Errorf("docs/openapi.yaml describes %s, which the server does not serve", op)
		}
	}
}

// TestOpenAPIIsWellFormed: an OpenAPI 3.1 document whose operations have
// unique ids and responses, whose path parameters are all declared, and
// whose every $ref leads somewhere.
func TestOpenAPIIsWellFormed(t *testing.T) {
	doc := loadOpenAPI(t)
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		t.Errorf("openapi = %q, want 3.1.x", v)
	}
	ids := map[string]string{}
	param := regexp.MustCompile(`\{([^}]+)\}`)
	for path, item := range object(t, doc["paths"], "paths") {
		for method, op := range object(t, item, path) {
			if !slices.Contains(httpMethods, method) {
				continue
			}
			where := strings.ToUpper(method) + " " + path
			o := object(t, op, where)
			id, _ := o["operationId"].(string)
			if id == "" {
				t.Errorf("%s has no operationId", where)
			} else if other, dup := ids[id]; dup {
				t.Errorf("%s and %s share operationId %q", where, other, id)
			}
			ids[id] = where
			if rs, _ := o["responses"].(map[string]any); len(rs) == 0 {
				t.Errorf("%s has no responses", where)
			}
			declared := map[string]bool{}
			params, _ := o["parameters"].([]any)
			for _, p := range params {
				pm := object(t, resolve(t, doc, p), where+" parameter")
				if pm["in"] == "path" {
					declared[pm["name"].(string)] = true
				}
			}
			for _, m := range param.FindAllStringSubmatch(path, -1) {
				if !declared[m[1]] {
					t.Errorf("%s does not declare its path parameter %q", where, m[1])
				}
			}
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if _, ok := v["$ref"]; ok {
				resolve(t, doc, v)
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
}

// resolve follows a local $ref ("#/components/…") to what it names.
func resolve(t *testing.T, doc map[string]any, v any) any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	ref, ok := m["$ref"].(string)
	if !ok {
		return v
	}
	if !strings.HasPrefix(ref, "#/") {
		t.Fatalf("$ref %q is not local to the document", ref)
	}
	var at any = doc
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		next, ok := at.(map[string]any)[part]
		if !ok {
			t.Fatalf("$ref %q leads nowhere", ref)
		}
		at = next
	}
	return resolve(t, doc, at)
}

// responseSchema is the JSON Schema the description gives for the answer of
// method path with status, ready to validate: components' schemas become the
// schema's $defs.
func responseSchema(t *testing.T, doc map[string]any, method, path string, status int) *jsonschema.Resolved {
	t.Helper()
	where := method + " " + path
	item := object(t, object(t, doc["paths"], "paths")[path], where)
	op := object(t, item[strings.ToLower(method)], where)
	resp, ok := object(t, op["responses"], where+" responses")[strconv.Itoa(status)]
	if !ok {
		t.Fatalf("docs/openapi.yaml does not describe %s answering %d", where, status)
	}
	content := object(t, object(t, resolve(t, doc, resp), where)["content"], where+" content")
	media := object(t, content["application/json"], where+" application/json")
	root := map[string]any{
		"$defs": object(t, object(t, doc["components"], "components")["schemas"], "schemas"),
	}
	for k, v := range object(t, media["schema"], where+" schema") {
		root[k] = v
	}
	data, err := json.Marshal(root)
	if err != nil {
		t.Fatalf("encoding the schema of %s: %v", where, err)
	}
	data = []byte(strings.ReplaceAll(string(data), "#/components/schemas/", "#/$defs/"))
	var s jsonschema.Schema
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("the schema of %s %d is not JSON Schema: %v", where, status, err)
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("resolving the schema of %s %d: %v", where, status, err)
	}
	return resolved
}

// TestOpenAPISchemasMatchWhatTheServerAnswers sends real requests to a
// server wired as in production and checks each answer against the schema
// docs/openapi.yaml gives for its route and status: a client generated from
// the description reads what ship really sends.
func TestOpenAPISchemasMatchWhatTheServerAnswers(t *testing.T) {
	doc := loadOpenAPI(t)
	dir := t.TempDir()
	folder := filepath.Join(dir, ".ship", "tasks")
	if err := os.MkdirAll(folder, 0o700); err != nil {
		t.Fatal(err)
	}
	task := "---\ncron: \"0 9 * * *\"\ntimezone: UTC\nchatKey: api:chat:reports\n---\nWrite the report.\n"
	if err := os.WriteFile(filepath.Join(folder, "report.md"), []byte(task), 0o600); err != nil {
		t.Fatal(err)
	}
	// Usage is counted, so /api/status carries today's usage.
	tally, err := usage.Open("", time.Now)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, setup{dir: dir, show: true, exec: true, usage: tally, tasks: func(eng *engine.Engine) server.TaskService {
		s, err := tasks.New(tasks.Options{Dir: folder, Submitter: eng, History: eng, Dispatchers: eng})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}})

	check := func(method, route string, r response, status int) {
		t.Helper()
		if r.status != status {
			t.Fatalf("%s %s = %d %s, want %d", method, route, r.status, r.body, status)
		}
		var v any
		if err := json.Unmarshal(r.body, &v); err != nil {
			t.Fatalf("%s %s: body %q is not JSON: %v", method, route, r.body, err)
		}
		if err := responseSchema(t, doc, method, route, status).Validate(v); err != nil {
			t.Errorf("%s %s %d does not match docs/openapi.yaml: %v\nbody: %s", method, route, status, err, r.body)
		}
	}
	post := func(path, body string) response { return e.request(http.MethodPost, path, []byte(body), nil) }

	check("GET", "/health", e.get("/health"), 200)
	check("POST", "/api/execute", post("/api/execute", `{"instructions":"hello","chatId":"demo","userId":"u1"}`), 200)
	check("POST", "/api/execute", post("/api/execute", `{"instructions":"hello","unknown":1}`), 400)
	check("POST", "/api/execute", post("/api/execute", `{"instructions":"again","chatId":"demo","messageId":"m1"}`), 200)
	check("POST", "/api/execute", post("/api/execute", `{"instructions":"again","chatId":"demo","messageId":"m1"}`), 409)
	check("POST", "/api/send", post("/api/send", `{"userMessageId":"s1","message":"hi","chatId":"demo"}`), 200)
	status := e.get("/api/status")
	check("GET", "/api/status", status, 200)
	if _, ok := status.json(t)["usage"]; !ok {
		t.Errorf("GET /api/status has no usage to check: %s", status.body)
	}
	check("GET", "/api/models", e.get("/api/models"), 200)
	check("GET", "/api/tools", e.get("/api/tools?chatKey=api:chat:demo&user=telegram:1&command=ls"), 200)
	check("GET", "/api/tools", e.get("/api/tools?user=nobody"), 400)
	check("GET", "/api/chats", e.get("/api/chats"), 200)
	check("GET", "/api/chats/{chatKey}/messages", e.get("/api/chats/api:chat:demo/messages?limit=10"), 200)
	check("GET", "/api/chats/{chatKey}/messages", e.get("/api/chats/api:chat:nobody/messages"), 404)
	check("GET", "/api/chats/{chatKey}/questions", e.get("/api/chats/api:chat:demo/questions"), 200)
	check("POST", "/api/questions/{id}/answer", post("/api/questions/q-none/answer", `{"choice":1}`), 404)
	check("GET", "/api/files/{path}", e.get("/api/files/nothing/here.png"), 404)
	check("GET", "/api/tasks", e.get("/api/tasks"), 200)
	check("POST", "/api/tasks/{name}/run", post("/api/tasks/report/run", `{}`), 202)
	check("POST", "/api/tasks/{name}/run", post("/api/tasks/nothing/run", `{}`), 404)
	check("GET", "/api/sse", e.get("/api/sse?events=other"), 400)
	check("GET", "/metrics", e.get("/metrics"), 404) // this setup keeps no metrics
}

// TestRoutesAreRegisteredFromTheList keeps server.Routes the single source:
// a route registered with a literal pattern anywhere else in package server
// would be served without Routes (and so docs/openapi.yaml) knowing it.
func TestRoutesAreRegisteredFromTheList(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatalf("parsing %s: %v", name, err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "Handle" && sel.Sel.Name != "HandleFunc") {
				return true
			}
			if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				t.Errorf("%s: route %s is registered outside apiRoutes (server/routes.go); add it there and to docs/openapi.yaml",
					fset.Position(call.Pos()), lit.Value)
			}
			return true
		})
	}
}
