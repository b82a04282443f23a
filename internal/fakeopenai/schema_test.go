package fakeopenai

import "testing"

func TestToolParametersAreCheckedAsTheRealAPIDoes(t *testing.T) {
	t.Parallel()
	s, err := Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	withParams := func(params string) string {
		return userHi + `,"tools":[{"type":"function","function":{"name":"ok","parameters":{"type":"object","properties":{}}}},` +
			`{"type":"function","function":{"name":"x","parameters":` + params + `}}]}`
	}
	const missing = `{"error":{"message":"Invalid schema for function 'x': In context=(), object schema missing properties.",` +
		`"type":"invalid_request_error","param":"tools[1].function.parameters","code":"invalid_function_parameters"}}`
	const notObject = `{"error":{"message":"Invalid schema for function 'x': schema must have type 'object' and not have ` +
		`'oneOf'/'anyOf'/'allOf'/'enum'/'not' at the top level.","type":"invalid_request_error",` +
		`"param":"tools[1].function.parameters","code":"invalid_function_parameters"}}`
	for _, tc := range []struct {
		name, params string
		status       int
		body         string // the whole error body, when checked
	}{
		{"no properties (MCP's no-argument tool)", `{"type":"object"}`, 400, missing},
		{"no properties, strictness off", `{"type":"object","additionalProperties":false}`, 400, missing},
		{"properties not an object", `{"type":"object","properties":[]}`, 400, missing},
		{"no type", `{"properties":{}}`, 400, notObject},
		{"a string schema", `{"type":"string"}`, 400, notObject},
		{"anyOf at the top", `{"type":"object","properties":{},"anyOf":[{"required":["a"]}]}`, 400, notObject},
		{"not an object", `[]`, 400, `{"error":{"message":"Invalid type for 'tools[1].function.parameters': expected an object, ` +
			`but got an array instead.","type":"invalid_request_error","param":"tools[1].function.parameters","code":"invalid_type"}}`},
		{"empty properties", `{"type":"object","properties":{}}`, 200, ""},
		{"nested object without properties", `{"type":"object","properties":{"o":{"type":"object"}}}`, 200, ""},
		{"null", `null`, 200, ""},
	} {
		resp, body := post(t, "POST", s.BaseURL()+"/chat/completions", "application/json", withParams(tc.params), nil)
		if resp.StatusCode != tc.status {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, resp.StatusCode, tc.status, body)
			continue
		}
		if tc.body != "" && body != tc.body+"\n" && body != tc.body {
			t.Errorf("%s: body\n%s\nwant\n%s", tc.name, body, tc.body)
		}
	}
	if n := s.RequestCount(); n != 10 {
		t.Errorf("recorded %d requests, want every one (refused ones too)", n)
	}
}
