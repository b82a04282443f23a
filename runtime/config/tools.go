package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/policy"
)

// ToolsConfig is the "tools" section of ship.json: exec_shell's settings
// under "exec", and everything else is the tool policy (allow, deny,
// requireApproval, roles, chats, TTLs; see package policy).
type ToolsConfig struct {
	Exec ExecConfig
	// Jobs bounds exec_shell's background jobs ("jobs").
	Jobs JobsConfig
	// Agents bounds agent_spawn's sub-agents ("agents").
	Agents SubAgentsConfig
	// Policy is the section without "exec", as policy.Parse reads it.
	Policy json.RawMessage
}

// ExecConfig is exec_shell. It is off unless Enabled; the policy still
// decides who may run what once it is on.
type ExecConfig struct {
	Enabled bool `json:"enabled"`
	// TimeoutSeconds applies to a call without timeoutMs (default 30);
	// MaxTimeoutSeconds caps any call (default 300).
	TimeoutSeconds    int `json:"timeoutSeconds,omitempty"`
	MaxTimeoutSeconds int `json:"maxTimeoutSeconds,omitempty"`
	// MaxOutputBytes is kept of stdout, and of stderr (default 65536).
	MaxOutputBytes int `json:"maxOutputBytes,omitempty"`
	// Sandbox says whether commands run in a bubblewrap sandbox that hides
	// ship's process, environment and state files: "auto" (the default:
	// sandboxed when bwrap works, otherwise unsandboxed with loud
	// warnings), "required" (no working sandbox: every command is
	// refused) or "off" (never sandboxed).
	Sandbox string `json:"sandbox,omitempty"`
	// Network keeps the host's network inside the sandbox; by default a
	// sandboxed command has none (not even the host's loopback, where
	// ship's own API listens).
	Network bool `json:"network,omitempty"`
}

// The values of tools.exec.sandbox.
const (
	SandboxAuto     = "auto"
	SandboxRequired = "required"
	SandboxOff      = "off"
)

// SandboxMode is tools.exec.sandbox with the default filled in.
func (e ExecConfig) SandboxMode() string {
	if e.Sandbox == "" {
		return SandboxAuto
	}
	return e.Sandbox
}

// Bounds of the exec settings: a mistyped number must not hand the model
// an hour-long shell or a gigabyte of output.
const (
	maxExecTimeoutSeconds = 3600
	maxExecOutputBytes    = 4 << 20
)

// UnmarshalJSON splits the section into exec, jobs, agents and the policy;
// unknown fields of the first three are errors like the rest of ship.json.
func (t *ToolsConfig) UnmarshalJSON(b []byte) error {
	if s := bytes.TrimSpace(b); len(s) == 0 || string(s) == "null" {
		*t = ToolsConfig{}
		return nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return fmt.Errorf("tools must be an object: %w", err)
	}
	out := ToolsConfig{}
	for _, sec := range []struct {
		name string
		into any
	}{{"exec", &out.Exec}, {"jobs", &out.Jobs}, {"agents", &out.Agents}} {
		raw, ok := fields[sec.name]
		if !ok {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(sec.into); err != nil {
			return fmt.Errorf("tools.%s: %w", sec.name, err)
		}
		delete(fields, sec.name)
	}
	if len(fields) > 0 {
		rest, err := json.Marshal(fields)
		if err != nil {
			return fmt.Errorf("tools: %w", err)
		}
		out.Policy = rest
	}
	*t = out
	return nil
}

// MarshalJSON writes the section back as one object.
func (t ToolsConfig) MarshalJSON() ([]byte, error) {
	fields := map[string]any{}
	if len(t.Policy) > 0 {
		if err := json.Unmarshal(t.Policy, &fields); err != nil {
			return nil, fmt.Errorf("tools: %w", err)
		}
	}
	fields["exec"] = t.Exec
	if t.Jobs != (JobsConfig{}) {
		fields["jobs"] = t.Jobs
	}
	if t.Agents != (SubAgentsConfig{}) {
		fields["agents"] = t.Agents
	}
	return json.Marshal(fields)
}

func (e ExecConfig) validate() error {
	if e.TimeoutSeconds < 0 || e.TimeoutSeconds > maxExecTimeoutSeconds ||
		e.MaxTimeoutSeconds < 0 || e.MaxTimeoutSeconds > maxExecTimeoutSeconds {
		return fmt.Errorf("%w: tools.exec timeouts must be between 1 and %d seconds", ErrInvalid, maxExecTimeoutSeconds)
	}
	if e.MaxOutputBytes < 0 || e.MaxOutputBytes > maxExecOutputBytes {
		return fmt.Errorf("%w: tools.exec.maxOutputBytes must be between 1 and %d", ErrInvalid, maxExecOutputBytes)
	}
	switch e.Sandbox {
	case "", SandboxAuto, SandboxRequired, SandboxOff:
	default:
		return fmt.Errorf("%w: tools.exec.sandbox must be %q, %q or %q, not %q",
			ErrInvalid, SandboxAuto, SandboxRequired, SandboxOff, e.Sandbox)
	}
	return nil
}

// ExecTimeouts returns exec_shell's default and maximum timeouts (zero
// where ship.json leaves them to the tool's defaults).
func (e ExecConfig) ExecTimeouts() (def, max time.Duration) {
	return time.Duration(e.TimeoutSeconds) * time.Second, time.Duration(e.MaxTimeoutSeconds) * time.Second
}

// ToolPolicy parses the policy part of the tools section.
func (c Config) ToolPolicy() (*policy.Policy, error) {
	p, err := policy.Parse(c.Tools.Policy)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, FileName, err)
	}
	return p, nil
}

// Secrets returns every credential the configuration holds (model key,
// platform secrets, API tokens, named ones too): values that must never reach the model, a
// tool's environment or a log.
func (c Config) Secrets() []string {
	a := c.Adapters
	all := []string{
		c.LLM.APIKey, c.Server.Token, c.STT.APIKey,
		a.Telegram.BotToken, a.Telegram.WebhookSecret,
		a.Feishu.AppSecret, a.Feishu.EncryptKey, a.Feishu.VerificationToken,
		a.QQ.AppSecret, a.QQ.WebhookSecret, c.Cluster.NATS.Token,
	}
	all = append(all, c.modelKeys()...)
	for _, t := range c.Server.Tokens {
		all = append(all, t.Token)
	}
	out := all[:0]
	for _, s := range all {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// PrivateNames are the names in the project folder that hold ship's
// secrets and state (ship.json, .env, .ship): a sandboxed command must not
// see them, though it works in that folder.
func PrivateNames() []string { return []string{FileName, EnvFileName, StateDir} }

// SecretEnv names the environment variables that hold secrets ship knows:
// a tool's child process never sees them.
var SecretEnv = []string{
	"LLM_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "SHIP_API_TOKEN", "SHIP_NATS_TOKEN", "SHIP_NATS_URL",
	"TELEGRAM_BOT_TOKEN", "TELEGRAM_WEBHOOK_SECRET",
	"FEISHU_APP_SECRET", "FEISHU_ENCRYPT_KEY", "FEISHU_VERIFICATION_TOKEN",
	"QQ_APP_SECRET", "QQ_WEBHOOK_SECRET", "STT_API_KEY",
}

// PolicyFile serves the tool policy of ship.json and picks up edits:
// Current looks at the file's size and modification time (one stat) and
// parses it again when they changed. An edit that does not parse keeps the
// last good policy and is logged once, as one error line.
type PolicyFile struct {
	path   string
	lookup LookupEnv
	log    zerolog.Logger

	mu    sync.Mutex
	stamp fileStamp
	cur   *policy.Policy
}

type fileStamp struct {
	exists bool
	size   int64
	mod    time.Time
}

// NewPolicyFile watches the ship.json cfg was loaded from, starting from
// the policy cfg holds (cfg must have come from Load).
func NewPolicyFile(cfg Config, log zerolog.Logger) (*PolicyFile, error) {
	p, err := cfg.ToolPolicy()
	if err != nil {
		return nil, err
	}
	f := &PolicyFile{path: filepath.Join(cfg.Dir, FileName), lookup: cfg.lookup, log: log, cur: p}
	if f.lookup == nil {
		f.lookup = os.LookupEnv
	}
	f.stamp = stampOf(f.path)
	return f, nil
}

func stampOf(path string) fileStamp {
	st, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{exists: true, size: st.Size(), mod: st.ModTime()}
}

// Current returns the policy in force.
func (f *PolicyFile) Current() *policy.Policy {
	stamp := stampOf(f.path)
	f.mu.Lock()
	defer f.mu.Unlock()
	if stamp == f.stamp {
		return f.cur
	}
	f.stamp = stamp
	p, err := f.read()
	if err != nil {
		f.log.Error().Err(err).Str("file", f.path).Msg("tool policy not reloaded: keeping the last good one until ship.json is fixed")
		return f.cur
	}
	f.cur = p
	f.log.Info().Str("file", f.path).Msg("tool policy reloaded")
	return p
}

// read parses the tools section of ship.json as it is now. A missing file
// is an empty policy, as at start-up.
func (f *PolicyFile) read() (*policy.Policy, error) {
	raw, err := os.ReadFile(f.path)
	if os.IsNotExist(err) {
		return policy.Parse(nil)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", FileName, err)
	}
	var cfg Config
	if err := decodeFile(raw, f.lookup, &cfg); err != nil {
		return nil, err
	}
	if err := cfg.Tools.Exec.validate(); err != nil {
		return nil, err
	}
	return cfg.ToolPolicy()
}
