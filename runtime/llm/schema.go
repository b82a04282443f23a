package llm

import (
	"bytes"
	"encoding/json"
	"slices"
)

// ToolParameters returns params, a tool's JSON schema for its arguments,
// in the shape every provider takes. MCP allows an input schema of just
// {"type":"object"} (usual for a tool that takes no arguments) and ship's
// own tools may be written loosely, but OpenAI answers 400
// invalid_function_parameters to a whole request when one function's
// parameters are an object schema without "properties", are not of type
// "object", or have oneOf/anyOf/allOf/enum/not at the top level: one such
// tool would fail every message. So:
//
//   - a schema that is not a JSON object (null, a list, unreadable) becomes
//     the empty object schema;
//   - the top-level type becomes "object": a missing type, or a list of
//     types that includes "object" (["object","null"]), is set to it; any
//     other type cannot describe arguments, which are always an object, so
//     the schema is replaced by the empty object schema and the tool is
//     offered without arguments (the tool still gets what the model sends,
//     and checks it);
//   - oneOf/anyOf/allOf/enum/not are dropped from the top level (the tool
//     checks its arguments itself);
//   - "properties" is set to {} when missing or not an object;
//   - "required" keeps only names that are in "properties", and goes when
//     none is left or it is not a list of names.
//
// Everything else (descriptions, nested schemas, additionalProperties)
// passes through untouched. params is not modified.
func ToolParameters(params any) map[string]any {
	b, err := json.Marshal(params)
	if err != nil {
		return emptyObjectSchema()
	}
	// UseNumber keeps numbers (maxLength, bounds) exactly as written.
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var s map[string]any
	if err := dec.Decode(&s); err != nil || s == nil {
		return emptyObjectSchema()
	}
	if !objectType(s["type"]) {
		return emptyObjectSchema()
	}
	s["type"] = "object"
	for _, k := range []string{"oneOf", "anyOf", "allOf", "enum", "not"} {
		delete(s, k)
	}
	props, ok := s["properties"].(map[string]any)
	if !ok {
		props = map[string]any{}
		s["properties"] = props
	}
	if req := knownRequired(s["required"], props); req != nil {
		s["required"] = req
	} else {
		delete(s, "required")
	}
	return s
}

// objectType reports whether a schema's "type" value lets it be an object
// schema: absent, "object", or a list of types that includes "object".
func objectType(t any) bool {
	switch t := t.(type) {
	case nil:
		return true
	case string:
		return t == "object"
	case []any:
		return slices.Contains(t, any("object"))
	}
	return false
}

// knownRequired is the names of required that props has, in order; nil
// when there are none or required is not a list.
func knownRequired(required any, props map[string]any) []any {
	list, ok := required.([]any)
	if !ok {
		return nil
	}
	var out []any
	for _, name := range list {
		n, ok := name.(string)
		if _, known := props[n]; ok && known && !slices.Contains(out, any(n)) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func emptyObjectSchema() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{}}
}
