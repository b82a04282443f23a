package main_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
)

// TestE2EChatShowsJobLines is `ship chat` (plain, piped) against the real
// binary: a background exec_shell job the chat starts shows a line when
// it starts and one when it ends, once each, while the session goes on.
// (/cancel is a command of the platforms' chats, not of the API's: the
// other endings' lines are checked in chat_jobs_test.go.)
func TestE2EChatShowsJobLines(t *testing.T) {
	t.Parallel()
	fake := startFake(t, fakeopenai.RunCommands)
	dir := initProject(t)
	setTools(t, dir, `{"exec": {"enabled": true, "sandbox": "off"}, "allow": ["exec_shell"]}`)
	if err := os.WriteFile(filepath.Join(dir, "job.sh"), []byte(jobScript+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = os.WriteFile(filepath.Join(dir, "a.go"), nil, 0o600)
	})
	const token = "chat-jobs-token-0123456789abcdef0123456789abcdef"
	p := startShip(t, dir, modelEnv(fake, "SHIP_API_TOKEN="+token))

	ctx, cancel := context.WithTimeout(context.Background(), 4*hangGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, shipBin, "chat", "--url", p.url, "--chat", "jobs")
	cmd.Env = append(baseEnv(), "SHIP_API_TOKEN="+token)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 256)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var seen []string
	// waitLine reads output until a line starting with prefix.
	waitLine := func(prefix string) string {
		t.Helper()
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("ship chat ended before a line %q:\n%s\nstderr: %s", prefix, strings.Join(seen, "\n"), stderr.String())
				}
				seen = append(seen, l)
				if strings.HasPrefix(l, prefix) {
					return l
				}
			case <-ctx.Done():
				t.Fatalf("no line %q:\n%s\nstderr: %s", prefix, strings.Join(seen, "\n"), stderr.String())
			}
		}
	}
	say := func(text string) {
		t.Helper()
		if _, err := stdin.Write([]byte(text + "\n")); err != nil {
			t.Fatal(err)
		}
	}

	say("bg: sh job.sh a")
	if l := waitLine("⚙ job J1 started"); l != "⚙ job J1 started: exec_shell `sh job.sh a`" {
		t.Errorf("start line %q", l)
	}
	waitLine("— ") // the turn ended while the job runs
	say("hello")
	waitLine("— ")
	if err := os.WriteFile(filepath.Join(dir, "a.go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if l := waitLine("⚙ job J1 "); !strings.HasPrefix(l, "⚙ job J1 done after ") || !strings.HasSuffix(l, " (exit 0)") {
		t.Errorf("end line %q", l)
	}

	// A last turn, so any repeated job line would have come by its end.
	say("bye")
	waitLine("— ")
	if err := stdin.Close(); err != nil {
		t.Fatal(err)
	}
	for l := range lines {
		seen = append(seen, l)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("ship chat: %v\nstderr: %s", err, stderr.String())
	}
	count := map[string]int{}
	for _, l := range seen {
		if strings.HasPrefix(l, "⚙ job ") {
			count[strings.Join(strings.Fields(l)[:4], " ")]++
		}
	}
	for _, want := range []string{"⚙ job J1 started:", "⚙ job J1 done"} {
		if count[want] != 1 {
			t.Errorf("%d lines %q, want 1:\n%s", count[want], want, strings.Join(seen, "\n"))
		}
	}
	if len(count) != 2 {
		t.Errorf("job lines %v, want the two above", count)
	}
}
