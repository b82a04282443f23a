package fakeanthropic

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// sseEvents returns a stream's events as name and data.
func sseEvents(t *testing.T, stream string) (names []string, data []map[string]any) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(stream))
	for sc.Scan() {
		name, ok := strings.CutPrefix(sc.Text(), "event: ")
		if !ok {
			continue
		}
		sc.Scan()
		var ev map[string]any
		if err := json.Unmarshal([]byte(strings.TrimPrefix(sc.Text(), "data: ")), &ev); err != nil {
			t.Fatalf("event %s: %v", name, err)
		}
		names = append(names, name)
		data = append(data, ev)
	}
	return names, data
}

// TestStreamErrorEventAfter200: a scripted StreamError is an error event
// after HTTP 200, in the real API's shape, and ends the stream.
func TestStreamErrorEventAfter200(t *testing.T) {
	t.Parallel()
	s := start(t, func(Request) Response { return Response{Text: "never sent", StreamError: "overloaded_error"} })
	resp, got := post(t, "POST", s.URL()+messagesPath, body(`"max_tokens":100,"stream":true,`, userHi), goodHeaders)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	names, data := sseEvents(t, got)
	if strings.Join(names, " ") != "message_start ping error" {
		t.Fatalf("events %q", names)
	}
	e, _ := data[2]["error"].(map[string]any)
	if data[2]["type"] != "error" || e["type"] != "overloaded_error" || e["message"] != "Overloaded" {
		t.Errorf("error event %v", data[2])
	}
}

// TestPacedStreamComesInPieces: a paced answer's text and tool input come
// in pieces of Pace.Bytes, which join to what was scripted.
func TestPacedStreamComesInPieces(t *testing.T) {
	t.Parallel()
	input := `{"text":"a reply written slowly"}`
	s := start(t, func(Request) Response {
		return Response{Text: "Sure thing.", ToolUses: []ToolUse{{Name: "chat_send", Input: input}},
			Pace: Pace{Bytes: 4, Every: time.Millisecond}}
	})
	_, got := post(t, "POST", s.URL()+messagesPath, body(`"max_tokens":100,"stream":true,`+toolDef+",", userHi), goodHeaders)
	_, data := sseEvents(t, got)
	var text, partial strings.Builder
	var texts, partials int
	for _, ev := range data {
		d, _ := ev["delta"].(map[string]any)
		switch d["type"] {
		case "text_delta":
			texts++
			text.WriteString(d["text"].(string))
		case "input_json_delta":
			if p := d["partial_json"].(string); p != "" {
				partials++
				partial.WriteString(p)
			}
		}
	}
	if text.String() != "Sure thing." || texts != 3 {
		t.Errorf("text %q in %d pieces, want 3", text.String(), texts)
	}
	if partial.String() != input || partials != (len(input)+3)/4 {
		t.Errorf("input %q in %d pieces, want %d", partial.String(), partials, (len(input)+3)/4)
	}
}
