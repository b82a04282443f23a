package llm

import (
	"encoding/json"
	"testing"
)

func TestToolParameters(t *testing.T) {
	const empty = `{"properties":{},"type":"object"}`
	for _, tc := range []struct {
		name string
		in   any
		want string
	}{
		{"MCP's no-argument schema gets properties", json.RawMessage(`{"type":"object"}`), empty},
		{"with $schema and additionalProperties kept",
			json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","additionalProperties":false}`),
			`{"$schema":"http://json-schema.org/draft-07/schema#","additionalProperties":false,"properties":{},"type":"object"}`},
		{"a map without properties", map[string]any{"type": "object"}, empty},
		{"nil", nil, empty},
		{"JSON null", json.RawMessage(`null`), empty},
		{"unreadable JSON", json.RawMessage(`{"type":`), empty},
		{"a list", json.RawMessage(`[{"type":"object"}]`), empty},
		{"no type", json.RawMessage(`{"properties":{"q":{"type":"string"}}}`),
			`{"properties":{"q":{"type":"string"}},"type":"object"}`},
		{"a type list with object", json.RawMessage(`{"type":["object","null"],"properties":{"q":{}}}`),
			`{"properties":{"q":{}},"type":"object"}`},
		{"a string schema cannot describe arguments", json.RawMessage(`{"type":"string","description":"x"}`), empty},
		{"properties not an object", json.RawMessage(`{"type":"object","properties":[]}`), empty},
		{"required names only known keys, in order",
			json.RawMessage(`{"type":"object","properties":{"a":{},"b":{}},"required":["b","ghost","a","b"]}`),
			`{"properties":{"a":{},"b":{}},"required":["b","a"],"type":"object"}`},
		{"required with no known key goes", json.RawMessage(`{"type":"object","required":["x"]}`), empty},
		{"required not a list goes", json.RawMessage(`{"type":"object","properties":{"a":{}},"required":"a"}`),
			`{"properties":{"a":{}},"type":"object"}`},
		{"top-level combinators go, nested ones stay",
			json.RawMessage(`{"type":"object","anyOf":[{"required":["a"]}],"properties":{"a":{"oneOf":[{"type":"string"},{"type":"number"}]}}}`),
			`{"properties":{"a":{"oneOf":[{"type":"string"},{"type":"number"}]}},"type":"object"}`},
		{"numbers kept exactly", json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","maximum":9007199254740993}}}`),
			`{"properties":{"n":{"maximum":9007199254740993,"type":"integer"}},"type":"object"}`},
		{"ship's own style passes through",
			map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}, "required": []string{"text"}},
			`{"properties":{"text":{"type":"string"}},"required":["text"],"type":"object"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(ToolParameters(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("got  %s\nwant %s", b, tc.want)
			}
		})
	}
}

func TestToolParametersLeavesItsInputAlone(t *testing.T) {
	in := map[string]any{"type": "object", "required": []any{"ghost"}}
	ToolParameters(in)
	if _, ok := in["properties"]; ok || len(in["required"].([]any)) != 1 {
		t.Errorf("the input changed: %v", in)
	}
}
