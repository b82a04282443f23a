package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/shipmyagent/ship/internal/shipclient"
)

func TestParseCommand(t *testing.T) {
	tests := []struct {
		in      string
		name    string
		n       int
		text    string
		isCmd   bool
		wantErr bool
	}{
		{in: "hello", text: "hello"},
		{in: "/quit", name: "quit", isCmd: true},
		{in: "  /EXIT ", name: "quit", isCmd: true},
		{in: "/history", name: "history", n: 10, isCmd: true},
		{in: "/history 5", name: "history", n: 5, isCmd: true},
		{in: "/history 0", isCmd: true, wantErr: true},
		{in: "/history five", isCmd: true, wantErr: true},
		{in: "/history 5 6", isCmd: true, wantErr: true},
		{in: "/info now", isCmd: true, wantErr: true},
		{in: "/nope", isCmd: true, wantErr: true},
		{in: "//etc/hosts is a file", text: "/etc/hosts is a file"},
	}
	for _, tc := range tests {
		cmd, text, isCmd, err := parseCommand(tc.in)
		if (err != nil) != tc.wantErr || isCmd != tc.isCmd || cmd.name != tc.name || cmd.n != tc.n || text != tc.text {
			t.Errorf("parseCommand(%q) = %+v, %q, %v, %v", tc.in, cmd, text, isCmd, err)
		}
	}
}

func TestToolAndMetricsLines(t *testing.T) {
	ok := &shipclient.AbilityResult{Type: "success", Result: `{"inserted":2,"messages":2,"mode":"recent","note":"…","success":true}`}
	if got, _ := toolLine("chat_load_history", `{ "limit": 20 }`, ok); got != `⚙ chat_load_history {"limit":20} → ok (2 inserted)` {
		t.Errorf("load history line = %q", got)
	}
	sent := &shipclient.AbilityResult{Type: "success", Result: `{"success":true}`}
	if got, _ := toolLine("chat_send", `{"text":"`+strings.Repeat("x", 100)+`"}`, sent); got != `⚙ chat_send {"text":"`+strings.Repeat("x", 50)+"… → ok" {
		t.Errorf("long arguments: %q", got)
	}
	failed := &shipclient.AbilityResult{Type: "error", Error: "delivery failed:\nno route"}
	job := &shipclient.AbilityResult{Type: "success", Result: `{"job":"J7","status":"started","success":true}`}
	if got, _ := toolLine("exec_shell", `{"command":"make","background":true}`, job); got != "⏳ exec_shell → job J7 started in the background; its result comes as a new message (/jobs, /cancel J7)" {
		t.Errorf("a background job's line: %q", got)
	}
	if got, isOK := toolLine("chat_send", `{"text":"x"}`, failed); got != "✗ chat_send → error: delivery failed: no route" || isOK {
		t.Errorf("failed line = %q, %v", got, isOK)
	}
	invalid := &shipclient.AbilityResult{Type: "invalid-input", Message: "arguments must be an object"}
	if got, _ := toolLine("chat_send", "", invalid); got != "✗ chat_send → invalid-input: arguments must be an object" {
		t.Errorf("invalid input line = %q", got)
	}

	if got := metricsLine(1240*time.Millisecond, 2, &shipclient.Usage{PromptTokens: 480, CompletionTokens: 32}); got != "— 1.24 s · 2 tool calls · 512 tokens (480 in, 32 out)" {
		t.Errorf("metrics = %q", got)
	}
	if got := metricsLine(50*time.Millisecond, 1, nil); got != "— 0.05 s · 1 tool call · tokens n/a" {
		t.Errorf("metrics without usage = %q", got)
	}
}

func TestHistoryLines(t *testing.T) {
	now := time.Date(2025, 3, 4, 12, 0, 0, 0, time.UTC)
	msgs := []shipclient.Message{
		{TS: time.Date(2025, 3, 3, 9, 5, 0, 0, time.UTC).UnixMilli(), Role: "user", Text: "yesterday"},
		{TS: time.Date(2025, 3, 4, 11, 59, 58, 0, time.UTC).UnixMilli(), Role: "assistant", Text: "two\nlines\n"},
	}
	want := []string{
		"2025-03-03 09:05 user      yesterday",
		"11:59:58 assistant two",
		"                   lines",
	}
	if got := historyLines(msgs, now); !slices.Equal(got, want) {
		t.Errorf("historyLines =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// opsText renders ops the way plain mode does, for comparing.
func opsText(ops []turnOp) string {
	var b strings.Builder
	for _, op := range ops {
		switch op.kind {
		case opText:
			b.WriteString(op.text)
		case opMessageEnd:
			b.WriteString("|end|")
		case opTool, opRunError, opFile, opQuestion:
			b.WriteString("[" + op.text + "]")
		}
	}
	return b.String()
}

func content(id string, i int, s string) shipclient.Event {
	return shipclient.Event{Type: shipclient.TypeContent, MessageID: id, Index: i, Content: s}
}

func TestTurnOrdersChunksAndMessages(t *testing.T) {
	tr := newTurn()
	var ops []turnOp
	for _, ev := range []shipclient.Event{
		content("a", 1, "lo"), // out of order: waits for index 0
		content("a", 0, "hel"),
		content("b", 0, "second"), // waits for a to end
		content("a", -1, ""),
		content("b", -1, ""),
		content("c", 0, "cut "),
		content("c", 2, "short"), // index 1 never comes
		{Type: shipclient.TypeTaskCompleted},
	} {
		ops = append(ops, tr.apply(ev)...)
	}
	if got, want := opsText(ops), "hello|end|second|end|cut short|end|"; got != want {
		t.Errorf("ops = %q, want %q", got, want)
	}
}

func TestTurnToolLinesFollowTheReply(t *testing.T) {
	ok := &shipclient.AbilityResult{Type: "success", Result: `{"success":true}`}
	req := shipclient.Event{Type: shipclient.TypeAbilityRequest, CallID: "1", AbilityID: "chat_send", Input: `{"text":"hi"}`}
	resp := shipclient.Event{Type: shipclient.TypeAbilityResponse, CallID: "1", AbilityID: "chat_send", Result: ok}
	want := `hi|end|[⚙ chat_send {"text":"hi"} → ok]`

	// Streamed: the reply is open while the call runs and ends after it.
	tr := newTurn()
	var ops []turnOp
	for _, ev := range []shipclient.Event{content("r", 0, "hi"), req, resp, content("r", -1, "")} {
		ops = append(ops, tr.apply(ev)...)
	}
	if got := opsText(ops); got != want || tr.toolCalls != 1 {
		t.Errorf("streamed: ops = %q (%d calls), want %q", got, tr.toolCalls, want)
	}

	// Not streamed: the whole reply comes right after the call.
	tr, ops = newTurn(), nil
	for _, ev := range []shipclient.Event{req, resp, content("r", 0, "hi"), content("r", -1, "")} {
		ops = append(ops, tr.apply(ev)...)
	}
	if got := opsText(ops); got != want {
		t.Errorf("after the call: ops = %q, want %q", got, want)
	}

	// A failed call and a running one.
	tr = newTurn()
	tr.apply(req)
	if r := tr.running(); len(r) != 1 || r[0].AbilityID != "chat_send" {
		t.Errorf("running = %+v", r)
	}
	fail := resp
	fail.Result = &shipclient.AbilityResult{Type: "error", Error: "down"}
	got := opsText(append(tr.apply(fail), tr.apply(shipclient.Event{Type: shipclient.TypeError, ErrorCode: "LLM_FAILED", ErrorMessage: "x"})...))
	if got != "[✗ chat_send → error: down][✗ the turn failed: LLM_FAILED: x]" || len(tr.running()) != 0 {
		t.Errorf("failure ops = %q", got)
	}
}

func TestTurnShowsFilesAndQuestionsAfterTheirToolLine(t *testing.T) {
	ok := &shipclient.AbilityResult{Type: "success", Result: `{"success":true}`}
	req := shipclient.Event{Type: shipclient.TypeAbilityRequest, CallID: "1", AbilityID: "chat_send_file", Input: `{"paths":["a.txt"]}`}
	resp := shipclient.Event{Type: shipclient.TypeAbilityResponse, CallID: "1", AbilityID: "chat_send_file", Result: ok}
	art := shipclient.Event{Type: shipclient.TypeArtifact, Name: "a.txt", MIMEType: "text/plain", Size: 5, URL: "/api/files/x/a.txt",
		DownloadURL: "http://h/api/files/x/a.txt"}
	ui := shipclient.Event{Type: shipclient.TypeUI, Question: "Go?", Choices: []string{"Yes", "No"}}

	// The file line follows the tool line of the call that sent it.
	tr := newTurn()
	var ops []turnOp
	for _, ev := range []shipclient.Event{req, art, resp, {Type: shipclient.TypeTaskCompleted}} {
		ops = append(ops, tr.apply(ev)...)
	}
	want := `[⚙ chat_send_file {"paths":["a.txt"]} → ok][📎 a.txt (text/plain, 5 bytes) http://h/api/files/x/a.txt]`
	if got := opsText(ops); got != want {
		t.Errorf("ops = %q, want %q", got, want)
	}

	// A question while a reply streams waits for the reply to end; one
	// whose call never answers still shows when the run ends.
	tr, ops = newTurn(), nil
	for _, ev := range []shipclient.Event{content("r", 0, "hm"), ui, content("r", -1, "")} {
		ops = append(ops, tr.apply(ev)...)
	}
	if got, want := opsText(ops), "hm|end|[? Go?\n  1. Yes\n  2. No\n  type the number to answer (1–2)]"; got != want {
		t.Errorf("ops = %q, want %q", got, want)
	}
	tr, ops = newTurn(), nil
	for _, ev := range []shipclient.Event{req, art, {Type: shipclient.TypeError, ErrorCode: "TIMEOUT", ErrorMessage: "x"}} {
		ops = append(ops, tr.apply(ev)...)
	}
	if got := opsText(ops); !strings.HasPrefix(got, "[📎 a.txt") {
		t.Errorf("a file of a call cut off: ops = %q", got)
	}
}

func TestFileLineWithoutDetails(t *testing.T) {
	if got := fileLine(shipclient.Event{Name: "r.pdf", URL: "/api/files/r.pdf"}); got != "📎 r.pdf /api/files/r.pdf" {
		t.Errorf("fileLine = %q", got)
	}
	if got := fileLine(shipclient.Event{Name: "big.zip", MIMEType: "application/zip", Size: 3 << 20}); got != "📎 big.zip (application/zip, 3.0 MB)" {
		t.Errorf("fileLine = %q", got)
	}
}

func TestReadInputContinuation(t *testing.T) {
	r := bufio.NewReader(strings.NewReader("one\r\ntwo \\\nthree\n\nlast"))
	var got []string
	for {
		line, err := readInput(r)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, line)
	}
	if want := []string{"one", "two \nthree", "", "last"}; !slices.Equal(got, want) {
		t.Errorf("inputs = %q, want %q", got, want)
	}
}

func TestBackoff(t *testing.T) {
	mid := func() float64 { return 0.5 } // no jitter
	var got []time.Duration
	for a := 1; a <= 7; a++ {
		got = append(got, backoffDelay(a, mid))
	}
	want := []time.Duration{1, 2, 4, 8, 16, 30, 30}
	for i := range want {
		want[i] *= time.Second
	}
	if !slices.Equal(got, want) {
		t.Errorf("delays = %v, want %v", got, want)
	}
	if lo, hi := backoffDelay(1, func() float64 { return 0 }), backoffDelay(1, func() float64 { return 0.999 }); lo != 800*time.Millisecond || hi < 1190*time.Millisecond {
		t.Errorf("jitter range = %v … %v, want 0.8 s … 1.2 s", lo, hi)
	}
}

func TestEditor(t *testing.T) {
	var e editor
	for _, k := range []tea.KeyMsg{
		{Type: tea.KeyRunes, Runes: []rune("hi")},
		{Type: tea.KeyEnter, Alt: true},
		{Type: tea.KeyRunes, Runes: []rune("there")},
		{Type: tea.KeyCtrlW},
		{Type: tea.KeyRunes, Runes: []rune("you \\")},
	} {
		if !e.handleKey(k) {
			t.Fatalf("key %v not handled", k)
		}
	}
	if e.handleKey(tea.KeyMsg{Type: tea.KeyEnter}) {
		t.Error("Enter must be left to the caller")
	}
	if _, ok := e.submit(); ok {
		t.Fatal("a trailing backslash must continue the input, not send it")
	}
	e.insert("ok\r\npasted")
	text, ok := e.submit()
	if want := "hi\nyou \nok\npasted"; !ok || text != want {
		t.Errorf("submit = %q, %v; want %q", text, ok, want)
	}
	if e.value() != "" {
		t.Errorf("editor not empty after submit: %q", e.value())
	}
	e.set("ab")
	e.handleKey(tea.KeyMsg{Type: tea.KeyLeft})
	lines := e.lines(func(s string) string { return "[" + s + "]" })
	if !slices.Equal(lines, []string{"a[b]"}) {
		t.Errorf("cursor drawn as %q", lines)
	}
}

func TestEventJSONShapes(t *testing.T) {
	// The wire shapes of the contract decode into what the turn needs.
	var ev shipclient.Event
	raw := `{"type":"ability_response","taskId":"t","callId":"c","abilityId":"chat_send","result":{"type":"invalid-ability","message":"unknown tool x"},"timestamp":1}`
	if err := json.Unmarshal([]byte(raw), &ev); err != nil {
		t.Fatal(err)
	}
	if got, ok := toolLine(ev.AbilityID, "", ev.Result); ok || got != "✗ chat_send → invalid-ability: unknown tool x" {
		t.Errorf("line = %q", got)
	}
}

func TestRenderMarkdownKeepsTheWordsAndCode(t *testing.T) {
	in := "# Title\nSome **bold** and `code`.\n```go\nfmt.Println(\"hi\")  // spaced\n```\nend"
	out := renderMarkdown(in, 80)
	for _, want := range []string{"Title", "bold", "code", `fmt.Println("hi")  // spaced`, "end"} {
		if !strings.Contains(out, want) {
			t.Errorf("rendered output lost %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "**") || strings.Contains(out, "# Title") {
		t.Errorf("markup left in:\n%s", out)
	}
}
