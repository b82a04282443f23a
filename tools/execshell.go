package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/jobs"
	"github.com/shipmyagent/ship/runtime/secrets"
)

// ExecShellName is the name the model calls exec_shell by.
const ExecShellName = "exec_shell"

// Defaults of exec_shell, used where ExecShellOptions leaves a zero.
const (
	DefaultExecTimeout    = 30 * time.Second
	DefaultExecMaxTimeout = 5 * time.Minute
	DefaultExecMaxOutput  = 64 << 10 // bytes kept of stdout, and of stderr
)

// logCommandLimit caps the command as written to the log.
const logCommandLimit = 4 << 10

// ExecShellOptions configure exec_shell.
type ExecShellOptions struct {
	// Dir is the folder the command runs in (the project folder). Empty
	// means the process's working directory; a relative path is made
	// absolute at construction.
	Dir string
	// DefaultTimeout applies when the call gives no timeoutMs (default
	// 30 s); MaxTimeout caps any timeoutMs (default 5 min). A default above
	// the maximum is lowered to it.
	DefaultTimeout, MaxTimeout time.Duration
	// MaxOutput is how many bytes of stdout, and of stderr, are kept
	// (default 64 KiB each); the rest is counted and dropped.
	MaxOutput int
	// DropEnv names the environment variables the command must not see
	// (LLM_API_KEY, TELEGRAM_BOT_TOKEN, ...). Their values at construction
	// are added to Secrets.
	DropEnv []string
	// Secrets are values that must never reach the model or the log: any
	// variable whose value contains one is dropped from the command's
	// environment, and every occurrence in the output or the logged command
	// is replaced by "<redacted>". Values shorter than 6 bytes (after
	// trimming spaces) are ignored: redacting them would mangle ordinary
	// output, and they are too short to be real credentials.
	Secrets []string
	// Logger receives one line per command (field tool=exec_shell) with
	// the redacted command, the exit code and the duration.
	Logger zerolog.Logger

	// Sandbox says whether commands run in a bubblewrap sandbox (see
	// bwrapArgv); the zero value is SandboxAuto.
	Sandbox SandboxMode
	// Network keeps the host's network inside the sandbox.
	Network bool
	// Hidden names what a sandboxed command must not see in Dir (ship.json,
	// .env, .ship: config.PrivateNames).
	Hidden []string
	// Bwrap is the bwrap program, a path or a name looked up on PATH;
	// "" means "bwrap". Tests point it at nothing to see a missing
	// sandbox.
	Bwrap string
	// Jobs, when set, lets a call run in the background (background:
	// true): it answers at once with a job id, and the job's result comes
	// back to the chat as a new turn. Nil refuses background calls.
	Jobs *jobs.Manager
	// Watchdog is the ship binary, started beside each command that runs
	// without the sandbox to kill its process group should ship die first
	// (see Watch); "" runs commands without one.
	Watchdog string
}

// ExecShell is the exec_shell tool: it runs `sh -c command` in Dir, in a
// sandbox when one works (see SandboxMode), with a timeout, in a process
// group of its own that is killed whole when the command ends, times out or
// the run is cancelled, with the environment stripped of secrets and the
// output capped and redacted. Whether a command
// may run at all is for the caller to decide (see ExecShellCommand). It is
// safe for concurrent use.
type ExecShell struct {
	dir      string
	watchdog string
	dropEnv  map[string]bool
	log      zerolog.Logger
	jobs     *jobs.Manager
	// opts are the options it was built with: Update takes the
	// reloadable ones from its argument and the rest from here.
	opts ExecShellOptions
	// set are the settings a configuration reload replaces (Update); a
	// call reads them once, when it starts, and keeps them to its end.
	set atomic.Pointer[execSettings]
}

// execSettings are exec_shell's reloadable settings.
type execSettings struct {
	defaultTimeout time.Duration
	maxTimeout     time.Duration
	maxOutput      int
	secrets        *secrets.Set
	values         []string // what secrets was made of
	sandbox        *sandbox
}

// NewExecShell builds exec_shell from opts, filling in the defaults.
func NewExecShell(opts ExecShellOptions) *ExecShell {
	t := &ExecShell{
		dir:      opts.Dir,
		watchdog: opts.Watchdog,
		dropEnv:  map[string]bool{},
		log:      opts.Logger.With().Str("tool", ExecShellName).Logger(),
		jobs:     opts.Jobs,
		opts:     opts,
	}
	if t.dir != "" {
		if abs, err := filepath.Abs(t.dir); err == nil {
			t.dir = abs
		}
	}
	values := append([]string(nil), opts.Secrets...)
	for _, name := range opts.DropEnv {
		t.dropEnv[name] = true
		values = append(values, os.Getenv(name))
	}
	t.set.Store(t.settings(opts, values, nil))
	return t
}

// settings builds the reloadable settings of opts, hiding values; it
// keeps prev's sandbox when its mode and network stay (its check is
// done once).
func (t *ExecShell) settings(opts ExecShellOptions, values []string, prev *execSettings) *execSettings {
	s := &execSettings{defaultTimeout: opts.DefaultTimeout, maxTimeout: opts.MaxTimeout, maxOutput: opts.MaxOutput,
		values: values, secrets: secrets.New(values)}
	mode := opts.Sandbox
	if mode == "" {
		mode = SandboxAuto
	}
	if prev != nil && prev.sandbox.mode == mode && prev.sandbox.network == opts.Network {
		s.sandbox = prev.sandbox
	} else {
		s.sandbox = newSandbox(opts, sandboxDir(t.dir), t.log)
	}
	if s.maxTimeout <= 0 {
		s.maxTimeout = DefaultExecMaxTimeout
	}
	if s.defaultTimeout <= 0 {
		s.defaultTimeout = DefaultExecTimeout
	}
	s.defaultTimeout = min(s.defaultTimeout, s.maxTimeout)
	if s.maxOutput <= 0 {
		s.maxOutput = DefaultExecMaxOutput
	}
	return s
}

// Update puts opts's timeouts, output cap, sandbox mode and network in
// force from the next call on (a configuration reload); calls running
// keep theirs. Secrets are added to the ones hidden already, never
// dropped: a credential replaced in ship.json may still be in a chat.
// The folder, the dropped variables, the hidden names and the jobs stay
// as built.
func (t *ExecShell) Update(opts ExecShellOptions) {
	prev := t.cur()
	next := t.opts
	next.DefaultTimeout, next.MaxTimeout, next.MaxOutput = opts.DefaultTimeout, opts.MaxTimeout, opts.MaxOutput
	next.Sandbox, next.Network = opts.Sandbox, opts.Network
	values := append(append([]string(nil), prev.values...), opts.Secrets...)
	s := t.settings(next, values, prev)
	t.set.Store(s)
	if s.sandbox != prev.sandbox {
		// Checked in the background, as at start-up: the outcome is logged.
		go s.sandbox.check(context.Background())
	}
}

// cur is the settings in force.
func (t *ExecShell) cur() *execSettings { return t.set.Load() }

// sandboxDir is the project folder as the sandbox binds it: absolute, with
// symlinks resolved, so that the names it hides are found where they
// really are.
func sandboxDir(dir string) string {
	if dir == "" {
		dir, _ = os.Getwd()
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		return real
	}
	return dir
}

// SandboxStatus reports the sandbox as known now, without waiting for its
// check (Checked is false until then).
func (t *ExecShell) SandboxStatus() SandboxStatus { return t.cur().sandbox.current() }

// SandboxState is SandboxStatus for the core (engine.Sandboxed), which
// shows it in GET /api/tools without knowing its type.
func (t *ExecShell) SandboxState() any { return t.SandboxStatus() }

// CheckSandbox checks, once, that the sandbox works, logs the outcome and
// returns it. The first command does it if nothing did before; ship start
// does it in the background so that the answer is in the log early.
func (t *ExecShell) CheckSandbox(ctx context.Context) SandboxStatus {
	return t.cur().sandbox.check(ctx)
}

// Definition describes exec_shell to the model.
func (t *ExecShell) Definition() llms.FunctionDefinition {
	set := t.cur()
	where := "the project folder " + t.dir
	if t.dir == "" {
		where = "the project folder (the current directory)"
	}
	props := map[string]any{
		"command": map[string]any{"type": "string", "description": "The shell command line, run as `sh -c command`."},
		"timeoutMs": map[string]any{"type": "integer", "minimum": 1, "maximum": t.maxTimeoutMs(set),
			"description": fmt.Sprintf("Timeout in milliseconds (default %d, at most %d).", set.defaultTimeout.Milliseconds(), set.maxTimeout.Milliseconds()) + t.backgroundTimeoutText()},
	}
	if t.jobs != nil {
		props["background"] = map[string]any{"type": "boolean",
			"description": "Run the command as a background job: the call answers at once with a job id, the chat goes on, " +
				"and the command's result comes back in a new message when it ends. Use it for long builds and tests."}
	}
	return llms.FunctionDefinition{
		Name: ExecShellName,
		Description: fmt.Sprintf("Run a shell command with `sh -c` in %s and get its exit code, stdout and stderr. "+
			"The command has no input (stdin is empty) and no terminal. It is stopped, with every process it started, "+
			"when it times out (default %s, at most %s) or when it finishes: nothing it starts outlives it. "+
			"Only the first %d bytes of stdout and of stderr come back; the rest is counted and dropped, so filter long output (head, grep). "+
			"Credentials are not in its environment and are shown as <redacted>.%s",
			where, set.defaultTimeout, set.maxTimeout, set.maxOutput, set.sandbox.check(context.Background()).describe()),
		Parameters: map[string]any{
			"type":       "object",
			"properties": props,
			"required":   []string{"command"},
		},
	}
}

// execArgs are exec_shell's arguments.
type execArgs struct {
	Command    string   `json:"command"`
	TimeoutMs  *float64 `json:"timeoutMs"`
	Background bool     `json:"background"`
}

// errExecArgs marks arguments exec_shell refuses; its text starts with
// "arguments" so that the stream reports an invalid input.
var errExecArgs = errors.New("arguments")

func parseExecArgs(args json.RawMessage) (execArgs, error) {
	var in execArgs
	if err := json.Unmarshal(args, &in); err != nil {
		return in, fmt.Errorf(`%w must be an object {"command": string, "timeoutMs"?: integer, "background"?: boolean}: %w`, errExecArgs, err)
	}
	switch {
	case strings.TrimSpace(in.Command) == "":
		return in, fmt.Errorf("%w: command is empty", errExecArgs)
	case strings.ContainsRune(in.Command, 0):
		return in, fmt.Errorf("%w: command contains a NUL byte", errExecArgs)
	case in.TimeoutMs != nil && *in.TimeoutMs < 1:
		return in, fmt.Errorf("%w: timeoutMs must be a positive number of milliseconds", errExecArgs)
	}
	return in, nil
}

// ExecShellCommand returns the command line exec_shell would run for args,
// exactly as it will be given to `sh -c`, so that a policy can match it
// before the call. It fails, as Call would, on arguments that are not an
// object with a non-empty string command and a positive timeoutMs if any.
func ExecShellCommand(args json.RawMessage) (string, error) {
	in, err := parseExecArgs(args)
	if err != nil {
		return "", err
	}
	return in.Command, nil
}

// CommandLine is the command a call would run, for the tool policy
// (agent.CommandLiner).
func (t *ExecShell) CommandLine(args json.RawMessage) (string, error) { return ExecShellCommand(args) }

// timeout picks the timeout of a call and says whether it was clamped.
func (set *execSettings) timeout(ms *float64) (time.Duration, bool) {
	if ms == nil {
		return set.defaultTimeout, false
	}
	if *ms > float64(set.maxTimeout.Milliseconds()) {
		return set.maxTimeout, true
	}
	return time.Duration(math.Trunc(*ms)) * time.Millisecond, false
}

// Call runs the command and reports how it ended. A command that ran and
// exited non-zero, timed out or was cancelled gives success false with its
// exit code and output; only arguments it refuses and a command that could
// not be started give an error alone.
func (t *ExecShell) Call(ctx context.Context, args json.RawMessage) agent.ToolResult {
	in, err := parseExecArgs(args)
	if err != nil {
		return failure(err.Error())
	}
	set := t.cur()
	logged := clipText(set.secrets.Redact(in.Command), logCommandLimit)
	if err := ctx.Err(); err != nil {
		return failure("the run was cancelled before the command started: " + err.Error())
	}
	box := set.sandbox.check(ctx)
	if box.Refusing {
		t.log.Error().Str("command", logged).Str("reason", box.Reason).Msg("exec_shell: refused, no working sandbox")
		return failure(refusal(box))
	}
	if in.Background {
		return t.startJob(ctx, set, in, logged)
	}
	timeout, clamped := set.timeout(in.TimeoutMs)
	res, _ := t.execute(ctx, set, in, logged, box, timeout, clamped)
	return res
}

// execute runs in.Command with timeout and reports how it ended, with the
// exit code (-1 when it did not run).
func (t *ExecShell) execute(ctx context.Context, set *execSettings, in execArgs, logged string, box SandboxStatus, timeout time.Duration, clamped bool) (agent.ToolResult, int) {
	spec := runSpec{argv: []string{"/bin/sh", "-c", in.Command}, dir: t.dir, env: t.environ(set.secrets), timeout: timeout,
		keep: set.maxOutput + set.secrets.Lookahead()}
	if box.Active {
		// bwrap itself gets an empty environment too: it is pid 1 in the
		// sandbox, and a command may read /proc/1/environ.
		spec.argv, spec.env = set.sandbox.argv(in.Command), []string{}
	} else {
		// bwrap dies with ship and its pid namespace with it; a bare
		// shell's group needs a watchdog to follow ship.
		spec.watchdog = t.watchdog
	}
	out, err := runGroup(ctx, spec)
	if err != nil {
		t.log.Error().Err(err).Str("command", logged).Msg("exec_shell: the command could not be run")
		return failure(set.secrets.Redact(fmt.Sprintf("the command could not be run: %v", err))), -1
	}
	stdout, stdoutCut := clipRedacted(set.secrets, out.stdout.head, out.stdout.total, set.maxOutput)
	stderr, stderrCut := clipRedacted(set.secrets, out.stderr.head, out.stderr.total, set.maxOutput)

	fields := map[string]any{
		"exitCode":   out.exitCode,
		"stdout":     stdout,
		"stderr":     stderr,
		"durationMs": out.duration.Milliseconds(),
		"timeoutMs":  timeout.Milliseconds(),
	}
	if clamped {
		fields["timeoutClamped"] = true
		fields["requestedTimeoutMs"] = math.Trunc(*in.TimeoutMs)
	}
	if stdoutCut > 0 {
		fields["stdoutCutBytes"] = stdoutCut
	}
	if stderrCut > 0 {
		fields["stderrCutBytes"] = stderrCut
	}
	if out.signal != "" {
		fields["signal"] = out.signal
	}
	ok := false
	switch {
	case out.timedOut:
		fields["timedOut"] = true
		fields["error"] = fmt.Sprintf("the command timed out after %d ms; it and every process it started were killed", timeout.Milliseconds())
	case out.cancelled:
		fields["cancelled"] = true
		fields["error"] = "the run was cancelled; the command and every process it started were killed"
	case out.signal != "":
		fields["error"] = "the command was terminated by signal " + out.signal
	case out.exitCode != 0:
		fields["error"] = fmt.Sprintf("the command ran and exited with code %d", out.exitCode)
	default:
		ok = true
	}
	if out.detached {
		fields["warning"] = "a process that left the command's process group kept its output open and may still be running"
	}

	ev := t.log.Info()
	if out.detached || out.killErr != nil {
		ev = t.log.Warn().AnErr("killError", out.killErr)
	}
	ev.Str("command", logged).Bool("sandboxed", box.Active).Int("exitCode", out.exitCode).Int64("durationMs", out.duration.Milliseconds()).
		Bool("timedOut", out.timedOut).Bool("cancelled", out.cancelled).Str("signal", out.signal).
		Int64("stdoutBytes", out.stdout.total).Int64("stderrBytes", out.stderr.total).Bool("detached", out.detached).
		Msg("exec_shell: command finished")
	return shellResult(ok, fields), out.exitCode
}

// shellResult is result without HTML escaping: shell output is full of <, >
// and &, and the model reads them better as they are.
func shellResult(ok bool, fields map[string]any) agent.ToolResult {
	fields["success"] = ok
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(fields); err != nil {
		return failure("encoding the result failed")
	}
	return agent.ToolResult{Content: strings.TrimSuffix(b.String(), "\n"), OK: ok}
}

// Redact replaces every secret exec_shell knows in s with "<redacted>":
// the same hiding, for what the chat log keeps of any tool call.
func (t *ExecShell) Redact(s string) string { return t.cur().secrets.Redact(s) }
