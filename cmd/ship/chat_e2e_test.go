package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
)

// historyLine matches a /history line: time, role, text.
var historyLine = regexp.MustCompile(`^\d\d:\d\d:\d\d (user|assistant|system) +(.*)$`)

// runChat runs `ship chat args…` with stdin piped from input and returns
// what it printed and its exit status.
func runChat(t *testing.T, env []string, input string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, shipBin, append([]string{"chat"}, args...)...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(input)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ctx.Err() != nil || cmd.ProcessState == nil {
		t.Fatalf("ship chat %s: %v (hang guard %s)\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, hangGuard, out.String(), errOut.String())
	}
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

// chatLines splits the output of a chat into the lines before the last
// metrics line (the turns) and the lines after it.
func chatLines(t *testing.T, out string) (turns, after []string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	last := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "— ") {
			last = i
		}
	}
	if last < 0 {
		t.Fatalf("no metrics line (starting with \"— \") in the output:\n%s", out)
	}
	return lines[:last+1], lines[last+1:]
}

func TestE2EChatPiped(t *testing.T) {
	t.Parallel()
	fake := startFake(t, nil)
	p := startShip(t, initProject(t), modelEnv(fake))

	out, errOut, code := runChat(t, baseEnv(), "hello\n/history 5\n/quit\n", "--url", p.url, "--chat", "c1")
	if code != 0 {
		t.Fatalf("exit %d, want 0\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	turns, after := chatLines(t, out)
	if !strings.Contains(strings.Join(turns, "\n"), "echo: hello") {
		t.Errorf("the streamed reply \"echo: hello\" is not in the output:\n%s", out)
	}
	metrics := turns[len(turns)-1]
	if !strings.Contains(metrics, "1 tool call") {
		t.Errorf("metrics line %q does not count the tool call", metrics)
	}
	var hist []string
	for _, l := range after {
		if m := historyLine.FindStringSubmatch(l); m != nil {
			hist = append(hist, m[1]+": "+m[2])
		}
	}
	want := []string{"user: hello", "assistant: echo: hello"}
	if strings.Join(hist, "\n") != strings.Join(want, "\n") {
		t.Errorf("/history 5 listed %q, want %q\nstdout: %s", hist, want, out)
	}
	if errOut != "" {
		t.Errorf("stderr is not empty: %s", errOut)
	}
}

func TestE2EChatEOFAndHistoryLimit(t *testing.T) {
	t.Parallel()
	fake := startFake(t, nil)
	p := startShip(t, initProject(t), modelEnv(fake))

	// No /quit: the end of input ends the session. Three turns make six
	// messages, of which /history 5 shows the last five.
	out, errOut, code := runChat(t, baseEnv(), "one\ntwo\nthree\n/history 5", "--url", p.url, "--chat", "c2")
	if code != 0 {
		t.Fatalf("exit %d, want 0\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	turns, after := chatLines(t, out)
	metrics := 0
	for _, l := range turns {
		if strings.HasPrefix(l, "— ") {
			metrics++
		}
	}
	if metrics != 3 {
		t.Errorf("%d metrics lines, want 3 (one per turn):\n%s", metrics, out)
	}
	var hist []string
	for _, l := range after {
		if m := historyLine.FindStringSubmatch(l); m != nil {
			hist = append(hist, m[1]+": "+m[2])
		}
	}
	want := []string{"assistant: echo: one", "user: two", "assistant: echo: two", "user: three", "assistant: echo: three"}
	if strings.Join(hist, "\n") != strings.Join(want, "\n") {
		t.Errorf("/history 5 listed %q, want %q", hist, want)
	}
}

func TestE2EChatToken(t *testing.T) {
	t.Parallel()
	fake := startFake(t, nil)
	p := startShip(t, initProject(t), modelEnv(fake, "SHIP_API_TOKEN=right-token"))

	out, errOut, code := runChat(t, baseEnv(), "hello\n", "--url", p.url, "--token", "wrong-token")
	if code == 0 {
		t.Fatalf("a wrong --token exited 0\nstdout: %s\nstderr: %s", out, errOut)
	}
	if !strings.Contains(errOut, "--token") || !strings.Contains(errOut, "SHIP_API_TOKEN") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("stderr should be one line naming --token and SHIP_API_TOKEN, got %q", errOut)
	}
	if strings.Contains(out+errOut, "right-token") || strings.Contains(out+errOut, "wrong-token") {
		t.Errorf("a token was printed:\nstdout: %s\nstderr: %s", out, errOut)
	}
	if fake.RequestCount() != 0 {
		t.Errorf("the model was called %d times for a rejected client", fake.RequestCount())
	}

	// The token from the environment works.
	out, errOut, code = runChat(t, append(baseEnv(), "SHIP_API_TOKEN=right-token"), "hello\n", "--url", p.url)
	if code != 0 || !strings.Contains(out, "echo: hello") {
		t.Errorf("SHIP_API_TOKEN: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}

// chatShowModel sends a file on "send P" (chat_send_file), asks a question on
// "ask" (chat_ask) and echoes anything else, the answer's turn included.
func chatShowModel(r fakeopenai.Request) fakeopenai.Response {
	if len(r.ToolResults()) > 0 {
		return fakeopenai.Response{}
	}
	text := r.LastUser()
	switch {
	case strings.HasPrefix(text, "send ") && r.HasTool("chat_send_file"):
		args, _ := json.Marshal(map[string]any{"paths": []string{strings.TrimPrefix(text, "send ")}})
		return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: "chat_send_file", Arguments: string(args)}}}
	case text == "ask" && r.HasTool("chat_ask"):
		args, _ := json.Marshal(map[string]any{"question": "Which plan?", "choices": []string{"Plan A", "Plan B", "Plan C"}})
		return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: "chat_ask", Arguments: string(args)}}}
	}
	return fakeopenai.Response{Content: "echo: " + text}
}

// TestE2EChatFilesAndQuestions is `ship chat` against the real binary: a
// file the agent sends is a line with its download URL, which downloads
// with the token; a question shows its numbered choices, and the number
// typed next answers it.
func TestE2EChatFilesAndQuestions(t *testing.T) {
	t.Parallel()
	fake := startFake(t, chatShowModel)
	dir := initProject(t)
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("the notes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const token = "chat-e2e-token-0123456789abcdef0123456789abcdef"
	p := startShip(t, dir, modelEnv(fake, "SHIP_API_TOKEN="+token))

	out, errOut, code := runChat(t, append(baseEnv(), "SHIP_API_TOKEN="+token), "send notes.txt\nask\n2\n", "--url", p.url, "--chat", "files")
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	fileLine := regexp.MustCompile(`(?m)^📎 notes\.txt \(text/plain, 10 bytes\) (` + regexp.QuoteMeta(p.url) + `/api/files/\S+)$`)
	m := fileLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no file line for notes.txt in:\n%s", out)
	}
	for _, want := range []string{"? Which plan?\n  1. Plan A\n  2. Plan B\n  3. Plan C\n  type the number to answer (1–3)", "answered your question"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "2. Plan B]") {
		t.Errorf("typing 2 did not answer with Plan B:\n%s", out)
	}

	get := func(tok string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, m[1], nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := get(token); status != http.StatusOK || body != "the notes\n" {
		t.Errorf("downloading %s: %d %q", m[1], status, body)
	}
	if status, _ := get(""); status != http.StatusUnauthorized {
		t.Errorf("downloading without the token: %d, want 401", status)
	}
}
