package fakeanthropic

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// post sends a raw request and returns the response with its body read.
func post(t *testing.T, method, url, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

var goodHeaders = map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01"}

const toolDef = `"tools":[{"name":"chat_send","input_schema":{"type":"object"}}]`

func body(extra, messages string) string {
	return `{"model":"claude-test",` + extra + `"messages":[` + messages + `]}`
}

const (
	userHi  = `{"role":"user","content":"hi"}`
	twoUses = `{"role":"assistant","content":[{"type":"text","text":"Sending both."},` +
		`{"type":"tool_use","id":"toolu_a","name":"chat_send","input":{"text":"a"}},` +
		`{"type":"tool_use","id":"toolu_b","name":"chat_send","input":{"text":"b"}}]}`
	resultA = `{"type":"tool_result","tool_use_id":"toolu_a","content":"ok a"}`
	resultB = `{"type":"tool_result","tool_use_id":"toolu_b","content":[{"type":"text","text":"ok b"}]}`
)

func TestRejections(t *testing.T) {
	t.Parallel()
	s := start(t, nil)
	mt := `"max_tokens":100,`
	noKey := map[string]string{"anthropic-version": "2023-06-01"}
	noVersion := map[string]string{"x-api-key": "k"}
	cases := []struct {
		name, method, path, body string
		header                   map[string]string
		status                   int
		errType, contains        string
		recorded                 bool
	}{
		{"other path", "POST", "/v1/complete", body(mt, userHi), goodHeaders, 404, "not_found_error", "Not Found", false},
		{"GET", "GET", messagesPath, "", goodHeaders, 404, "not_found_error", "Not Found", false},
		{"no key", "POST", messagesPath, body(mt, userHi), noKey, 401, "authentication_error", "x-api-key header is required", false},
		{"no version", "POST", messagesPath, body(mt, userHi), noVersion, 400, "invalid_request_error", "anthropic-version", false},
		{"malformed", "POST", messagesPath, `{"model":`, goodHeaders, 400, "invalid_request_error", "parsing the body", false},
		{"no max_tokens", "POST", messagesPath, body("", userHi), goodHeaders, 400, "invalid_request_error", "max_tokens: Field required", true},
		{"max_tokens 0", "POST", messagesPath, body(`"max_tokens":0,`, userHi), goodHeaders, 400, "invalid_request_error", "greater than or equal to 1", true},
		{"max_tokens too big", "POST", messagesPath, body(`"max_tokens":100000,`, userHi), goodHeaders, 400, "invalid_request_error", "100000 > 64000", true},
		{"no messages", "POST", messagesPath, body(mt, ""), goodHeaders, 400, "invalid_request_error", "at least one message", true},
		{"system role", "POST", messagesPath, body(mt, `{"role":"system","content":"x"}`), goodHeaders, 400, "invalid_request_error", "'user' or 'assistant'", true},
		{"empty text", "POST", messagesPath, body(mt, `{"role":"user","content":[{"type":"text","text":""}]}`), goodHeaders, 400, "invalid_request_error", "must be non-empty", true},
		{"tool without schema", "POST", messagesPath, body(mt+`"tools":[{"name":"x"}],`, userHi), goodHeaders, 400, "invalid_request_error", "input_schema: Field required", true},
		{"unanswered tool_use", "POST", messagesPath, body(mt+toolDef+",", userHi+","+twoUses+`,{"role":"user","content":[`+resultA+`]}`),
			goodHeaders, 400, "invalid_request_error", "without `tool_result` blocks immediately after: toolu_b", true},
		{"text before tool_result", "POST", messagesPath, body(mt+toolDef+",", userHi+","+twoUses+`,{"role":"user","content":[{"type":"text","text":"x"},`+resultA+","+resultB+`]}`),
			goodHeaders, 400, "invalid_request_error", "toolu_a, toolu_b", true},
		{"orphan tool_result", "POST", messagesPath, body(mt, userHi+`,{"role":"assistant","content":"hm"},{"role":"user","content":[`+resultA+`]}`),
			goodHeaders, 400, "invalid_request_error", "unexpected `tool_use_id` found in `tool_result` blocks: toolu_a", true},
	}
	recorded := 0
	for _, c := range cases {
		resp, got := post(t, c.method, s.URL()+c.path, c.body, c.header)
		var e struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(got), &e); err != nil || resp.StatusCode != c.status || e.Type != "error" ||
			e.Error.Type != c.errType || !strings.Contains(e.Error.Message, c.contains) {
			t.Errorf("%s: %d %s (%v), want %d %s containing %q", c.name, resp.StatusCode, got, err, c.status, c.errType, c.contains)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q", c.name, ct)
		}
		if c.recorded {
			recorded++
		}
		if s.RequestCount() != recorded {
			t.Fatalf("%s: %d requests recorded, want %d", c.name, s.RequestCount(), recorded)
		}
	}
}

// TestParallelToolUsesAnsweredTogether: the real API's own shape for two
// calls in one answer (both results in one user message) and the split
// shape ship sends (one assistant message and one result per call) are both
// accepted; consecutive messages of one role count as one turn.
func TestParallelToolUsesAnsweredTogether(t *testing.T) {
	t.Parallel()
	s := start(t, nil)
	mt := `"max_tokens":100,` + toolDef + ","
	together := body(mt, userHi+","+twoUses+`,{"role":"user","content":[`+resultA+","+resultB+`]}`)
	split := body(mt, userHi+
		`,{"role":"assistant","content":[{"type":"text","text":"Sending both."}]}`+
		`,{"role":"assistant","content":[{"type":"tool_use","id":"toolu_a","name":"chat_send","input":{"text":"a"}}]}`+
		`,{"role":"user","content":[`+resultA+`]}`+
		`,{"role":"assistant","content":[{"type":"tool_use","id":"toolu_b","name":"chat_send","input":{"text":"b"}}]}`+
		`,{"role":"user","content":[`+resultB+`]}`)
	for _, b := range []string{together, split} {
		resp, got := post(t, "POST", s.URL()+messagesPath, b, goodHeaders)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, got)
		}
		// The echo model has nothing to add after tool results: empty content.
		if !strings.Contains(got, `"content":[]`) || !strings.Contains(got, `"stop_reason":"end_turn"`) {
			t.Errorf("answer %s", got)
		}
	}
	for _, r := range s.Requests() {
		uses, results := r.ToolUses(), r.ToolResults()
		if len(uses) != 2 || uses[0].ID != "toolu_a" || uses[1].ID != "toolu_b" || string(uses[1].Input) != `{"text":"b"}` ||
			len(results) != 2 || results[0].Text != "ok a" || results[1].Text != "ok b" || r.LastUser() != "hi" {
			t.Errorf("decoded uses %+v results %+v", uses, results)
		}
	}
}

// TestStreamWireShape checks the event sequence and its JSON, independently
// of any client.
func TestStreamWireShape(t *testing.T) {
	t.Parallel()
	s := start(t, func(Request) Response {
		return Response{Text: "Hi there", ToolUses: []ToolUse{{ID: "toolu_x", Name: "chat_send", Input: `{"text":"hello"}`}},
			InputTokens: 11, OutputTokens: 7}
	})
	resp, got := post(t, "POST", s.URL()+messagesPath, body(`"max_tokens":100,"stream":true,`+toolDef+",", userHi), goodHeaders)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var events []string
	var partial strings.Builder
	sc := bufio.NewScanner(strings.NewReader(got))
	for sc.Scan() {
		line := sc.Text()
		name, ok := strings.CutPrefix(line, "event: ")
		if !ok {
			continue
		}
		sc.Scan()
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		var ev map[string]any
		if !ok || json.Unmarshal([]byte(data), &ev) != nil || ev["type"] != name {
			t.Fatalf("event %s with data line %q", name, sc.Text())
		}
		if d, ok := ev["delta"].(map[string]any); ok && d["type"] == "input_json_delta" {
			partial.WriteString(d["partial_json"].(string))
		}
		if name == "message_delta" && (ev["delta"].(map[string]any)["stop_reason"] != "tool_use" ||
			ev["usage"].(map[string]any)["output_tokens"] != 7.0) {
			t.Errorf("message_delta %s", data)
		}
		if name == "message_start" && ev["message"].(map[string]any)["usage"].(map[string]any)["input_tokens"] != 11.0 {
			t.Errorf("message_start %s", data)
		}
		events = append(events, name)
	}
	want := "message_start ping content_block_start content_block_delta content_block_delta content_block_stop " +
		"content_block_start content_block_delta content_block_delta content_block_delta content_block_delta content_block_stop " +
		"message_delta message_stop"
	if strings.Join(events, " ") != want {
		t.Errorf("events\n%s\nwant\n%s", strings.Join(events, " "), want)
	}
	if partial.String() != `{"text":"hello"}` {
		t.Errorf("partial_json joins to %q", partial.String())
	}
}
