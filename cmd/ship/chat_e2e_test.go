package main_test

import (
	"bytes"
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"
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
