package guardrail_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/runtime/guardrail"
)

const report = `{"type":"object","required":["date","items"],"properties":{
  "date":{"type":"string"},"items":{"type":"array","items":{"type":"string"}}},"additionalProperties":false}`

func TestCheck(t *testing.T) {
	s, err := guardrail.Compile([]byte(report))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ out, want string }{
		{`{"date":"2026-11-26","items":["a"]}`, ""},
		{"```json\n{\"date\":\"d\",\"items\":[]}\n```", ""},
		{`{"date":"d"}`, "items"},
		{`{"date":"d","items":[1]}`, "string"},
		{`Here it is: {"date":"d","items":[]}`, "not valid JSON"},
		{`{"date":"d","items":[]} and more`, "after its JSON document"},
		{"  ", "empty"},
	} {
		got := s.Check(c.out)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("Check(%q) = %q, want one containing %q", c.out, got, c.want)
		}
	}
	if d := guardrail.Document("```json\n{}\n```"); d != "{}" {
		t.Errorf("Document = %q", d)
	}
}

func TestCompileRefusesBadSchemas(t *testing.T) {
	for _, raw := range []string{`[1]`, `{"minLength":"x"}`, `{"$ref":"https://example.com/s.json"}`} {
		if _, err := guardrail.Compile([]byte(raw)); !errors.Is(err, guardrail.ErrInvalidSchema) {
			t.Errorf("Compile(%s) = %v, want ErrInvalidSchema", raw, err)
		}
	}
}
