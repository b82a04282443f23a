package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/faketelegram"
	"github.com/shipmyagent/ship/internal/logbuf"
)

// hangGuard bounds every wait of the end-to-end tests. It is never a timing
// assertion: reaching it means something hangs, and the test says what.
const hangGuard = 15 * time.Second

// exitGuard bounds how long a stopping process may take. A replica stops
// its embedded NATS server last, which flushes every stream; under -race
// beside other packages' tests on 2 cores that once took over 10 s. Past
// the guard the process is made to print its goroutines (SIGQUIT). It is
// above the default shutdown.graceSeconds (30): a test that stops ship with
// a turn still held waits out the grace.
const exitGuard = 45 * time.Second

// shipBin is the binary under test, built once by TestMain.
var shipBin string

// TestMain builds the real binary once for the whole test process. Under
// `go test -race` the binary is built with -race too, so a data race in the
// running ship fails the test that caused it.
func TestMain(m *testing.M) {
	tmp, err := os.MkdirTemp("", "ship-e2e-")
	if err == nil {
		shipBin, err = buildShip(tmp)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(tmp)
	os.Exit(code)
}

// buildShip builds the package in the working folder (cmd/ship) into dir
// as a user does (`go build`, no tags): the binary the tests run is the one
// users get, cluster mode and `ship export` included.
func buildShip(dir string) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "ship")
	args := []string{"build", "-o", bin}
	if info, ok := debug.ReadBuildInfo(); ok && slices.Contains(info.Settings, debug.BuildSetting{Key: "-race", Value: "true"}) {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Dir = wd
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("`go %s .` in %s failed: %v\n%s", strings.Join(args, " "), wd, err, out)
	}
	return bin, nil
}

// baseEnv is the parent environment without anything that configures ship.
func baseEnv() []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return slices.ContainsFunc([]string{"LLM_", "SHIP_", "TELEGRAM_", "FEISHU_", "QQ_", "GORACE="},
			func(prefix string) bool { return strings.HasPrefix(kv, prefix) })
	})
	// A race-built ship otherwise sleeps 1 s at exit to flush reports;
	// its stderr is read after Wait, so nothing is lost without it.
	return append(env, "GORACE=atexit_sleep_ms=0")
}

// modelEnv is baseEnv plus the fake as the model, debug logs and extra.
func modelEnv(fake *fakeopenai.Server, extra ...string) []string {
	env := append(baseEnv(), "LLM_PROVIDER=openai", "LLM_API_KEY=test-key",
		"LLM_BASE_URL="+fake.BaseURL(), "LLM_MODEL=fake", "SHIP_LOG_LEVEL=debug")
	return append(env, extra...)
}

// startTelegram starts a Telegram Bot API fake for the bot token, closed
// with the test.
func startTelegram(t *testing.T, token string) *faketelegram.Server {
	t.Helper()
	tg, err := faketelegram.Start(faketelegram.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tg.Close)
	return tg
}

// telegramEnv points ship at tg as the bot token's Telegram.
func telegramEnv(tg *faketelegram.Server, token string) []string {
	return []string{"TELEGRAM_BOT_TOKEN=" + token, "TELEGRAM_API_BASE=" + tg.URL()}
}

// startFake starts a fake model answering with h (echo when nil).
func startFake(t *testing.T, h fakeopenai.Handler) *fakeopenai.Server {
	t.Helper()
	fake, err := fakeopenai.Start(h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	return fake
}

// blockTurn makes fake hold the model call for the user text text until
// release is called; entered receives once the call is held. Every other
// call is answered by EchoChatSend. Cleanup releases the call before the
// fake is closed.
func blockTurn(t *testing.T, fake *fakeopenai.Server, text string) (entered <-chan struct{}, release func()) {
	in, out := make(chan struct{}, 1), make(chan struct{})
	release = sync.OnceFunc(func() { close(out) })
	t.Cleanup(release)
	fake.SetHandler(func(r fakeopenai.Request) fakeopenai.Response {
		if r.LastUser() == text && len(r.ToolResults()) == 0 {
			select {
			case in <- struct{}{}:
			default:
			}
			<-out
		}
		return fakeopenai.EchoChatSend(r)
	})
	return in, release
}

// await receives from ch within the hang guard.
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(hangGuard):
		t.Fatalf("hang guard: still waiting for %s after %s", what, hangGuard)
		panic("unreachable")
	}
}

// eventually calls cond with a short backoff until it is true, within the
// hang guard.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for delay := 2 * time.Millisecond; !cond(); delay = min(2*delay, 100*time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("hang guard: still waiting for %s after %s", what, hangGuard)
		}
		time.Sleep(delay)
	}
}

// initProject runs `ship init` in a new temp folder and returns the folder.
func initProject(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bot")
	if out, errOut, code := runShip(t, baseEnv(), "init", dir); code != 0 {
		t.Fatalf("ship init %s: exit %d\nstdout: %s\nstderr: %s", dir, code, out, errOut)
	}
	return dir
}

// runShip runs a short-lived ship command and returns its output and exit
// status.
func runShip(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, shipBin, args...)
	cmd.Env = env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ctx.Err() != nil || cmd.ProcessState == nil {
		t.Fatalf("ship %s: %v (hang guard %s)\nstderr: %s", strings.Join(args, " "), err, hangGuard, errOut.String())
	}
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// shipProc is a running `ship start`.
type shipProc struct {
	cmd            *exec.Cmd
	url            string // http://127.0.0.1:<port>
	client         *http.Client
	stdout, stderr logbuf.Buffer
	exited         chan struct{} // closed when the process has exited
}

// startShip runs `ship start <dir> --port <free> args...` and waits until
// /health answers 200. A launch that lost its port to another process
// between freePort and the bind is retried on a new port. Cleanup kills the
// process if it still runs and logs its output if the test failed.
func startShip(t *testing.T, dir string, env []string, args ...string) *shipProc {
	t.Helper()
	for attempt := 1; ; attempt++ {
		p := launch(t, dir, env, args...)
		eventually(t, "GET /health answering 200", func() bool { return p.healthy() || p.hasExited() })
		if !p.hasExited() {
			return p
		}
		if attempt == 3 || !strings.Contains(p.stderr.String(), "address already in use") {
			t.Fatalf("ship exited with status %d before it was ready", p.cmd.ProcessState.ExitCode())
		}
	}
}

func launch(t *testing.T, dir string, env []string, args ...string) *shipProc {
	t.Helper()
	return launchOn(t, "ship", dir, freePort(t), true, env, args...)
}

// launchOn starts `ship start <dir> --port <port> args...` without waiting
// for it. Cleanup kills the process if it still runs, reports a data race
// in its output (naming it name) and, with logFailure, logs its output if
// the test failed.
func launchOn(t *testing.T, name, dir string, port int, logFailure bool, env []string, args ...string) *shipProc {
	t.Helper()
	p := &shipProc{url: "http://127.0.0.1:" + strconv.Itoa(port), client: &http.Client{Timeout: 2 * hangGuard}, exited: make(chan struct{})}
	argv := append([]string{"start", dir, "--port", strconv.Itoa(port)}, args...)
	p.cmd = exec.Command(shipBin, argv...)
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		_ = p.cmd.Wait() // the status is read from ProcessState
		close(p.exited)
	}()
	t.Cleanup(func() {
		if !p.hasExited() {
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		p.client.CloseIdleConnections()
		if strings.Contains(p.stderr.String(), "WARNING: DATA RACE") {
			t.Errorf("the race detector reported a data race in %s", name)
		}
		if logFailure && t.Failed() {
			t.Logf("ship %s\n--- stdout ---\n%s--- stderr ---\n%s", strings.Join(argv, " "), p.stdout.String(), p.stderr.String())
		}
	})
	return p
}

// healthy reports whether GET /health answers 200.
func (p *shipProc) healthy() bool {
	resp, err := p.client.Get(p.url + "/health")
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// hasExited reports whether the process has exited.
func (p *shipProc) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// wait waits for the process to exit and returns its exit status (-1 when a
// signal killed it).
func (p *shipProc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.exited:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(exitGuard):
		// SIGQUIT makes the Go runtime print every goroutine's stack to
		// stderr and exit: the report then says where it hung.
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-p.exited:
		case <-time.After(5 * time.Second):
		}
		t.Fatalf("hang guard: ship did not exit within %s; its goroutines at SIGQUIT:\n%s", exitGuard, lastLines(p.stderr.String(), 400))
		return 0
	}
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// stop sends sig and returns the exit status.
func (p *shipProc) stop(t *testing.T, sig syscall.Signal) int {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("sending %v: %v", sig, err)
	}
	return p.wait(t)
}

// response is an HTTP answer read in full.
type response struct {
	status int
	header http.Header
	body   []byte
}

// send sends a request to the process and reads the answer; header holds
// "Key: value" pairs.
func (p *shipProc) send(method, path, body string, header ...string) (response, error) {
	req, err := http.NewRequest(method, p.url+path, strings.NewReader(body))
	if err != nil {
		return response{}, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range header {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(k, strings.TrimSpace(v))
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: b}, err
}

// do is send that fails the test on a transport error.
func (p *shipProc) do(t *testing.T, method, path, body string, header ...string) response {
	t.Helper()
	r, err := p.send(method, path, body, header...)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

// executeResult is the 200 body of POST /api/execute.
type executeResult struct {
	Success   bool `json:"success"`
	ToolCalls []struct {
		Tool string `json:"tool"`
	} `json:"toolCalls"`
	Replies   []string `json:"replies"`
	MessageID string   `json:"messageId"`
}

// executeBody is the JSON of an /api/execute request.
func executeBody(chatID, text string) string {
	m := map[string]string{"instructions": text}
	if chatID != "" {
		m["chatId"] = chatID
	}
	b, _ := json.Marshal(m) // a string map always encodes
	return string(b)
}

// execute runs a turn and returns its 200 result; anything else is an error
// (it is called from goroutines, so it does not fail the test itself).
func (p *shipProc) execute(chatID, text string) (executeResult, error) {
	var res executeResult
	r, err := p.send("POST", "/api/execute", executeBody(chatID, text))
	if err == nil && r.status != http.StatusOK {
		err = fmt.Errorf("status %d, body %s", r.status, r.body)
	}
	if err == nil {
		err = json.Unmarshal(r.body, &res)
	}
	if err != nil {
		return res, fmt.Errorf("executing %q: %w", text, err)
	}
	return res, nil
}

// mustExecute is execute that fails the test.
func (p *shipProc) mustExecute(t *testing.T, chatID, text string) executeResult {
	t.Helper()
	res, err := p.execute(chatID, text)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// echoAsync runs a turn in the background and checks that it is answered
// with the fake model's echo; the channel receives nil or what went wrong.
func (p *shipProc) echoAsync(chatID, text string) <-chan error {
	ch := make(chan error, 1)
	go func() {
		res, err := p.execute(chatID, text)
		if err == nil && !slices.Equal(res.Replies, []string{"echo: " + text}) {
			err = fmt.Errorf("executing %q: replies %q, want [\"echo: %s\"]", text, res.Replies, text)
		}
		ch <- err
	}()
	return ch
}

// errorCode returns error.code of an error body ("" when there is none).
func errorCode(t *testing.T, r response) string {
	t.Helper()
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Errorf("status %d: body is not JSON: %q", r.status, r.body)
		return ""
	}
	if body.Error.Message == "" {
		t.Errorf("status %d: error.message is empty: %s", r.status, r.body)
	}
	return body.Error.Code
}
