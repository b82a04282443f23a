package fakeopenai

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// checkParameters applies the real API's rules for the top level of a
// function's parameters schema, which it checks even outside strict mode
// and answers with 400 invalid_function_parameters for the whole request:
//
//   - an object schema must have "properties": {"type":"object"} alone, as
//     MCP allows for a tool without arguments, is refused with "In
//     context=(), object schema missing properties." Reported with this
//     exact body in openai/openai-agents-python#449 (fixed by #454, which
//     adds "properties": {}) and langchain-ai/langchain-mcp-adapters#137
//     (its PR #343 quotes the whole body, param "tools[N].function.parameters");
//   - the schema must have type "object" and no oneOf/anyOf/allOf/enum/not
//     at the top level (langchain-ai/langchainjs#9804 quotes the message).
//
// A function without parameters, or with "parameters": null, is left alone:
// the reports say nothing of it. Nested schemas are not checked: every
// report is of context=(), the top level.
func checkParameters(i int, t wireTool) *apiError {
	raw := bytes.TrimSpace(t.Function.Parameters)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	param := fmt.Sprintf("tools[%d].function.parameters", i)
	var s map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &s) != nil {
		kind := map[byte]string{'[': "an array", '"': "a string"}[raw[0]]
		if kind == "" {
			kind = jsonKind(raw[0])
		}
		return invalid(param, "invalid_type", "Invalid type for '%s': expected an object, but got %s instead.", param, kind)
	}
	_, combinator := s["oneOf"]
	for _, k := range []string{"anyOf", "allOf", "enum", "not"} {
		_, has := s[k]
		combinator = combinator || has
	}
	if string(bytes.TrimSpace(s["type"])) != `"object"` || combinator {
		return invalid(param, "invalid_function_parameters",
			"Invalid schema for function '%s': schema must have type 'object' and not have "+
				"'oneOf'/'anyOf'/'allOf'/'enum'/'not' at the top level.", t.Function.Name)
	}
	if props := bytes.TrimSpace(s["properties"]); len(props) == 0 || props[0] != '{' {
		return invalid(param, "invalid_function_parameters",
			"Invalid schema for function '%s': In context=(), object schema missing properties.", t.Function.Name)
	}
	return nil
}
