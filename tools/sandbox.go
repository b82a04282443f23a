package tools

import (
	"context"
	"fmt"
	"sync"

	"github.com/rs/zerolog"
)

// SandboxMode says whether exec_shell runs commands in a sandbox
// (tools.exec.sandbox).
type SandboxMode string

// The sandbox modes. The zero value is SandboxAuto.
const (
	// SandboxAuto sandboxes commands when bwrap works here and otherwise
	// runs them unsandboxed, saying so loudly: a machine without
	// bubblewrap keeps a working shell.
	SandboxAuto SandboxMode = "auto"
	// SandboxRequired refuses every command when the sandbox does not work:
	// for an operator who would rather have no shell than one that can
	// read ship's secrets.
	SandboxRequired SandboxMode = "required"
	// SandboxOff never sandboxes.
	SandboxOff SandboxMode = "off"
)

// SandboxStatus is the state of exec_shell's sandbox, as GET /api/tools and
// `ship start` show it.
type SandboxStatus struct {
	Mode SandboxMode `json:"mode"`
	// Active says commands run in the sandbox. It is false until the
	// sandbox has been checked (Checked).
	Active bool `json:"active"`
	// Checked says whether bwrap has been tried yet: once, in the
	// background at start or on the first command.
	Checked bool `json:"checked"`
	// Tool is the sandbox program: "bwrap 0.8.0" once checked, its path
	// before.
	Tool string `json:"tool,omitempty"`
	// Network says a sandboxed command may use the host's network.
	Network bool `json:"network"`
	// Refusing says every command is refused: the mode is required and
	// the sandbox does not work.
	Refusing bool `json:"refusing,omitempty"`
	// Reason says why the sandbox is not active, and what to do about it.
	Reason string `json:"reason,omitempty"`
}

// Summary is the status in one line, for `ship start`.
func (s SandboxStatus) Summary() string {
	net := "network off"
	if s.Network {
		net = "host network on"
	}
	switch {
	case s.Active:
		return fmt.Sprintf("commands run in a %s sandbox (%s)", s.Tool, net)
	case s.Refusing:
		return "every command is refused: " + s.Reason
	case s.Mode == SandboxOff || s.Checked || s.Tool == "":
		return "commands run UNSANDBOXED and can read ship's secrets: " + s.Reason
	default:
		return fmt.Sprintf("commands will run in a bwrap sandbox (%s, %s); checking that it works, a failure is logged", s.Tool, net)
	}
}

// sandbox is exec_shell's sandbox: what was configured, the bwrap found at
// construction (a PATH lookup, cheap enough for start-up) and the outcome
// of the one real check, which runs bwrap once and is too slow (about
// 5 ms) to make start-up wait for.
type sandbox struct {
	mode    SandboxMode
	network bool
	bwrap   string // the program's path; "" when not found
	missing string // why no bwrap was found
	dir     string // the project folder, symlinks resolved
	hidden  []string
	log     zerolog.Logger

	once    sync.Once
	checked chan struct{} // closed when status and layout are set
	status  SandboxStatus
	layout  bwrapLayout
}

func newSandbox(opts ExecShellOptions, dir string, log zerolog.Logger) *sandbox {
	s := &sandbox{
		mode: opts.Sandbox, network: opts.Network, dir: dir, log: log,
		hidden: append([]string(nil), opts.Hidden...), checked: make(chan struct{}),
	}
	if s.mode == "" {
		s.mode = SandboxAuto
	}
	if s.mode == SandboxOff {
		return s
	}
	name := opts.Bwrap
	if name == "" {
		name = "bwrap"
	}
	path, err := findBwrap(name)
	if err != nil {
		s.missing = err.Error()
	}
	s.bwrap = path
	return s
}

// current is the status without waiting for the check.
func (s *sandbox) current() SandboxStatus {
	select {
	case <-s.checked:
		return s.status
	default:
	}
	st := SandboxStatus{Mode: s.mode, Network: s.network, Tool: s.bwrap}
	switch {
	case s.mode == SandboxOff:
		st.Reason = "tools.exec.sandbox is off"
	case s.bwrap == "" && s.mode == SandboxRequired:
		st.Refusing = true
		st.Reason = "tools.exec.sandbox is required and " + s.missing
	case s.bwrap == "":
		st.Reason = s.missing
	default:
		st.Reason = "not checked yet"
	}
	return st
}

// check runs the real check once (later callers wait for the first) and
// logs its outcome as one line, an error when commands run unsandboxed or
// are refused.
func (s *sandbox) check(ctx context.Context) SandboxStatus {
	s.once.Do(func() {
		st := s.current()
		st.Checked = true
		if s.mode != SandboxOff && s.bwrap != "" {
			// A cancelled caller must not leave "context canceled" as the
			// verdict for every later command.
			layout, tool, err := probeBwrap(context.WithoutCancel(ctx), s)
			switch {
			case err == nil:
				st.Active, st.Tool, st.Reason, s.layout = true, tool, "", layout
			case s.mode == SandboxRequired:
				st.Refusing = true
				st.Reason = fmt.Sprintf("tools.exec.sandbox is required and %v", err)
			default:
				st.Reason = err.Error()
			}
		}
		s.status = st
		close(s.checked)
		s.logStatus(st)
	})
	<-s.checked
	return s.status
}

func (s *sandbox) logStatus(st SandboxStatus) {
	switch {
	case st.Active:
		s.log.Info().Str("sandbox", st.Tool).Bool("network", st.Network).
			Msg("exec_shell: commands run in the sandbox (no access to ship's process, environment or state files)")
	case st.Refusing:
		s.log.Error().Str("reason", st.Reason).Msg("exec_shell REFUSES every command: no working sandbox")
	default:
		s.log.Error().Str("mode", string(st.Mode)).Str("reason", st.Reason).
			Msg("exec_shell runs commands UNSANDBOXED: they can read ship's environment, .env and ship.json")
	}
}

// refusal is the answer to a command while the sandbox is required and not
// working.
func refusal(st SandboxStatus) string {
	return "exec_shell refuses to run commands: " + st.Reason +
		` (or set tools.exec.sandbox to "auto" to run them unsandboxed)`
}

// sandboxEnv is a sandboxed command's whole environment: nothing of
// ship's, so no credential can reach it whatever its variable is called.
// HOME is the private /tmp, so tools' caches and dotfiles do not land in
// the project folder.
func sandboxEnv(dir string) []string {
	return []string{
		"PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
		"HOME=/tmp", "TMPDIR=/tmp", "LANG=C.UTF-8", "TERM=dumb", "PWD=" + dir,
	}
}

// describe tells the model what the sandbox lets a command do.
func (st SandboxStatus) describe() string {
	switch {
	case st.Refusing:
		return " It currently refuses every command: " + st.Reason + "."
	case !st.Active:
		return ""
	}
	net := "There is no network."
	if st.Network {
		net = "The network is available."
	}
	return " It runs in a sandbox: the system is read-only, only the project folder and a private /tmp " +
		"(emptied after each command, also HOME) are writable, ship's own files are hidden and the environment is minimal. " +
		net + " A command killed by a signal exits with code 128+N."
}
