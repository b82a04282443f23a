package main_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/internal/fakemcp"
	"github.com/shipmyagent/ship/internal/fakeopenai"
)

// pipedChat is a `ship chat` session whose input the test writes line by
// line while reading what it prints.
type pipedChat struct {
	t      *testing.T
	ctx    context.Context
	cmd    *exec.Cmd
	stdin  interface{ Write([]byte) (int, error) }
	close  func() error
	lines  chan string
	seen   []string
	stderr *strings.Builder
}

func startPipedChat(t *testing.T, env []string, args ...string) *pipedChat {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*hangGuard)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, shipBin, append([]string{"chat"}, args...)...)
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &pipedChat{t: t, ctx: ctx, cmd: cmd, stdin: stdin, close: stdin.Close, lines: make(chan string, 256), stderr: &strings.Builder{}}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	}()
	return c
}

func (c *pipedChat) say(text string) {
	c.t.Helper()
	if _, err := c.stdin.Write([]byte(text + "\n")); err != nil {
		c.t.Fatal(err)
	}
}

// waitLine reads output until a line starting with prefix.
func (c *pipedChat) waitLine(prefix string) string {
	c.t.Helper()
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				c.t.Fatalf("ship chat ended before a line %q:\n%s\nstderr: %s", prefix, strings.Join(c.seen, "\n"), c.stderr.String())
			}
			c.seen = append(c.seen, l)
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-c.ctx.Done():
			c.t.Fatalf("no line %q:\n%s\nstderr: %s", prefix, strings.Join(c.seen, "\n"), c.stderr.String())
		}
	}
}

// end closes the input, waits for chat to exit 0 and returns its job
// lines counted by their first four words ("⚙ job J1 started:").
func (c *pipedChat) end() map[string]int {
	c.t.Helper()
	if err := c.close(); err != nil {
		c.t.Fatal(err)
	}
	for l := range c.lines {
		c.seen = append(c.seen, l)
	}
	if err := c.cmd.Wait(); err != nil {
		c.t.Fatalf("ship chat: %v\nstderr: %s", err, c.stderr.String())
	}
	count := map[string]int{}
	for _, l := range c.seen {
		if strings.HasPrefix(l, "⚙ job ") {
			count[strings.Join(strings.Fields(l)[:4], " ")]++
		}
	}
	return count
}

// checkJobLines says whether each job line in want appeared once, and no
// other.
func (c *pipedChat) checkJobLines(count map[string]int, want ...string) {
	c.t.Helper()
	for _, w := range want {
		if count[w] != 1 {
			c.t.Errorf("%d lines %q, want 1:\n%s", count[w], w, strings.Join(c.seen, "\n"))
		}
	}
	if len(count) != len(want) {
		c.t.Errorf("job lines %v, want %q", count, want)
	}
}

// TestE2EChatShowsJobLines is `ship chat` (plain, piped) against the real
// binary: a background exec_shell job the chat starts shows a line when
// it starts and one when it ends, once each, while the session goes on.
// (The other endings' lines are checked in chat_jobs_test.go; /cancel in
// TestE2EChatCancelsAJob.)
func TestE2EChatShowsJobLines(t *testing.T) {
	t.Parallel()
	fake := startFake(t, fakeopenai.RunCommands)
	dir := initProject(t)
	setTools(t, dir, `{"exec": {"enabled": true, "sandbox": "off"}, "allow": ["exec_shell"]}`)
	if err := os.WriteFile(filepath.Join(dir, "job.sh"), []byte(jobScript+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.WriteFile(filepath.Join(dir, "a.go"), nil, 0o600) })
	const token = "chat-jobs-token-0123456789abcdef0123456789abcdef"
	p := startShip(t, dir, modelEnv(fake, "SHIP_API_TOKEN="+token))

	c := startPipedChat(t, append(baseEnv(), "SHIP_API_TOKEN="+token), "--url", p.url, "--chat", "jobs")
	c.say("bg: sh job.sh a")
	if l := c.waitLine("⚙ job J1 started"); l != "⚙ job J1 started: exec_shell `sh job.sh a`" {
		t.Errorf("start line %q", l)
	}
	c.waitLine("— ") // the turn ended while the job runs
	c.say("hello")
	c.waitLine("— ")
	if err := os.WriteFile(filepath.Join(dir, "a.go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if l := c.waitLine("⚙ job J1 "); !strings.HasPrefix(l, "⚙ job J1 done after ") || !strings.HasSuffix(l, " (exit 0)") {
		t.Errorf("end line %q", l)
	}
	// A last turn, so any repeated job line would have come by its end.
	c.say("bye")
	c.waitLine("— ")
	c.checkJobLines(c.end(), "⚙ job J1 started:", "⚙ job J1 done")
}

// TestE2EChatCancelsAJob: in `ship chat`, /jobs lists the chat's running
// job and /cancel stops it, as in a platform chat: the command is answered
// at once (no turn runs for it), the job's process is gone, its line says
// who cancelled it, and no result turn follows.
func TestE2EChatCancelsAJob(t *testing.T) {
	t.Parallel()
	fake := startFake(t, fakeopenai.RunCommands)
	dir := initProject(t)
	setTools(t, dir, `{"exec": {"enabled": true, "sandbox": "off"}, "allow": ["exec_shell"]}`)
	if err := os.WriteFile(filepath.Join(dir, "job.sh"), []byte(jobScript+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startShip(t, dir, modelEnv(fake))

	c := startPipedChat(t, baseEnv(), "--url", p.url, "--chat", "cancels")
	c.say("bg: sh job.sh c")
	c.waitLine("⚙ job J1 started")
	c.waitLine("— ")
	pid := readJobPID(t, dir, "c")
	calls := fake.RequestCount()
	c.say("/jobs")
	if l := c.waitLine("J1 running"); !strings.Contains(l, "exec_shell `sh job.sh c`") {
		t.Errorf("/jobs line %q", l)
	}
	c.say("/cancel J1")
	c.waitLine("Cancelling job J1")
	if l := c.waitLine("⚙ job J1 "); !strings.HasPrefix(l, "⚙ job J1 cancelled by ") {
		t.Errorf("end line %q", l)
	}
	processGone(t, pid)
	if n := fake.RequestCount(); n != calls {
		t.Errorf("the model was called %d times for /jobs and /cancel, want none", n-calls)
	}
	c.say("bye")
	c.waitLine("— ")
	c.checkJobLines(c.end(), "⚙ job J1 started:", "⚙ job J1 cancelled")
}

// mcpJobCalls is mcpCalls, answering a job's result turn in words.
func mcpJobCalls(r fakeopenai.Request) fakeopenai.Response {
	if last := r.LastUser(); strings.HasPrefix(last, "[job ") && len(r.ToolResults()) == 0 {
		return fakeopenai.Response{Content: "the job said: " + last}
	}
	return mcpCalls(r)
}

// TestE2EMCPCallInTheBackground is the real binary with an MCP server
// whose build_* tools are listed in "background" (and exec_shell off, so
// the jobs are there for MCP alone): the call answers at once while the
// server holds it, `ship chat` shows the job's lines, and once the server
// answers, the result comes back to the chat as one new turn.
func TestE2EMCPCallInTheBackground(t *testing.T) {
	t.Parallel()
	web := fakemcp.StartHTTP(fakemcp.HTTPOptions{})
	t.Cleanup(web.Close)
	fake := startFake(t, mcpJobCalls)
	dir := initProject(t)
	addToShipJSON(t, dir, map[string]any{
		"mcp":   map[string]any{"servers": map[string]any{"web": map[string]any{"url": web.URL, "background": []string{"build_*"}}}},
		"tools": map[string]any{"allow": []string{"mcp.web.*"}},
	})
	p := startShip(t, dir, modelEnv(fake))
	eventually(t, "the MCP server ready", func() bool {
		return strings.Contains(string(p.do(t, "GET", "/api/status", "").body), `"state":"ready"`)
	})

	c := startPipedChat(t, baseEnv(), "--url", p.url, "--chat", "mcpjobs")
	c.say(`call mcp__web__build_wait {"name":"e1"}`)
	if l := c.waitLine("⚙ job J1 started"); l != "⚙ job J1 started: mcp.web.build_wait `{\"name\":\"e1\"}`" {
		t.Errorf("start line %q", l)
	}
	if l := c.waitLine("result: "); !strings.Contains(l, `"job":"J1"`) {
		t.Errorf("the tool's answer %q", l)
	}
	c.waitLine("— ")
	select {
	case got := <-web.Entered():
		if got != "e1" {
			t.Errorf("the server got %q", got)
		}
	case <-c.ctx.Done():
		t.Fatal("the call never reached the server")
	}
	web.Release("e1", "green")
	if l := c.waitLine("⚙ job J1 "); !strings.HasPrefix(l, "⚙ job J1 done after ") || !strings.HasSuffix(l, " (exit 0)") {
		t.Errorf("end line %q", l)
	}
	eventually(t, "the job's result turn", func() bool { return jobResultTurns(fake) > 0 })
	c.checkJobLines(c.end(), "⚙ job J1 started:", "⚙ job J1 done")
	if n := jobResultTurns(fake); n != 1 {
		t.Errorf("%d turns carried the job's result, want 1", n)
	}
	var turn string
	for _, q := range fake.Requests() {
		if strings.HasPrefix(q.LastUser(), "[job ") {
			turn = q.LastUser()
		}
	}
	if !strings.Contains(turn, "[job J1 (mcp.web.build_wait") || !strings.Contains(turn, "built e1: green") {
		t.Errorf("the result turn %q", turn)
	}
}

func jobResultTurns(fake *fakeopenai.Server) int {
	n := 0
	for _, q := range fake.Requests() {
		if strings.HasPrefix(q.LastUser(), "[job ") && len(q.ToolResults()) == 0 {
			n++
		}
	}
	return n
}
