package mcptools

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/runtime/mcp"
)

var validName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestModelNamesAreValidUniqueStableAndReversible(t *testing.T) {
	long := strings.Repeat("very_long_tool_name_", 5)
	tools := []mcp.Tool{
		{Server: "github", Name: "create_issue"},
		{Server: "github", Name: "repo.list"},
		{Server: "github", Name: "repo_list"},
		{Server: "github", Name: "files/read"},
		{Server: "github", Name: "读取"},
		{Server: "github", Name: long},
		{Server: "github", Name: long + "2"},
		{Server: "a", Name: "b__c"},
		{Server: "a__b", Name: "c"},
		{Server: strings.Repeat("s", 32), Name: long},
	}
	tab, names := newTable(tools)
	seen := map[string]bool{}
	for i, n := range names {
		if !validName.MatchString(n) {
			t.Errorf("%s.%s → %q: not a valid function name", tools[i].Server, tools[i].Name, n)
		}
		if seen[n] {
			t.Errorf("%q given twice", n)
		}
		seen[n] = true
		if got := tab[n]; got.Server != tools[i].Server || got.Name != tools[i].Name {
			t.Errorf("%q maps back to %s.%s, want %s.%s", n, got.Server, got.Name, tools[i].Server, tools[i].Name)
		}
	}
	// Readable where possible; a lossy or long name keeps its readable start.
	for i, want := range map[int]string{0: "mcp__github__create_issue", 2: "mcp__github__repo_list", 7: "mcp__a__b__c"} {
		if names[i] != want {
			t.Errorf("%s.%s → %q, want %q", tools[i].Server, tools[i].Name, names[i], want)
		}
	}
	if !strings.HasPrefix(names[1], "mcp__github__repo_list_") || !strings.HasPrefix(names[5], "mcp__github__very_long_tool_name_") {
		t.Errorf("hashed names lost their readable start: %q, %q", names[1], names[5])
	}
	// A tool keeps its name whatever else the servers offer (the model may
	// have seen it earlier in the chat).
	_, alone := newTable([]mcp.Tool{tools[1], tools[5]})
	if alone[0] != names[1] || alone[1] != names[5] {
		t.Errorf("names changed with the set: %q, %q vs %q, %q", alone[0], alone[1], names[1], names[5])
	}
}

func TestPolicyName(t *testing.T) {
	if got := PolicyName("github", "repo.list"); got != "mcp.github.repo.list" {
		t.Errorf("PolicyName = %q", got)
	}
}

func TestParametersPassTheSchemaThrough(t *testing.T) {
	for _, in := range []string{
		`{"type":"object","properties":{"q":{"type":"string","description":"what to look for"}},"required":["q"]}`,
		`{"type":"object"}`, // fitted to providers by the runtime, not here
		`null`,
	} {
		if got := string(parameters([]byte(in)).(json.RawMessage)); got != in {
			t.Errorf("parameters(%s) = %s", in, got)
		}
	}
	if got := parameters([]byte(`{"type":`)); got != nil {
		t.Errorf("an unreadable schema = %v", got)
	}
}
