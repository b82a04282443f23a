package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/shipmyagent/ship/runtime/llm"
)

func envOf(m map[string]string) LookupEnv {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func write(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestDefaultsWithoutAnyFile(t *testing.T) {
	cfg, err := Load(t.TempDir(), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.Host != "127.0.0.1" || cfg.Server.Port != 3000 || cfg.Queue.Capacity < 1000 ||
		cfg.Queue.Concurrency != 1 || cfg.Store.Durability != "always" || cfg.LLM.Provider != "" {
		t.Errorf("defaults = %+v", cfg)
	}
	if err := cfg.LLM.Validate(); !errors.Is(err, llm.ErrNoProvider) || !strings.Contains(err.Error(), "--offline") {
		t.Errorf("no model: %v, want a hint to set LLM_PROVIDER or pass --offline", err)
	}
}

func TestEnvironmentWinsOverShipJSONAndVarsExpand(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, FileName, `{
	  "llm": {"provider": "anthropic", "model": "from-file", "apiKey": "${MY_KEY}"},
	  "server": {"port": 4000, "token": "${TOKEN_VAR}"},
	  "adapters": {"telegram": {"botToken": "file-token", "enabled": false}}
	}`)
	cfg, err := Load(dir, envOf(map[string]string{
		"LLM_MODEL":          "from-env",
		"MY_KEY":             "sk-expanded",
		"TOKEN_VAR":          "t0k",
		"SHIP_PORT":          "5000",
		"TELEGRAM_BOT_TOKEN": "env-token",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.LLM.Provider != "anthropic" || cfg.LLM.Model != "from-env" || cfg.LLM.APIKey != "sk-expanded" {
		t.Errorf("llm = %+v", cfg.LLM)
	}
	if cfg.Server.Port != 5000 || cfg.Server.Token != "t0k" {
		t.Errorf("server = %+v", cfg.Server)
	}
	if cfg.Adapters.Telegram.BotToken != "env-token" || cfg.Adapters.Telegram.On() {
		t.Errorf("telegram = %+v: env token wins, but enabled:false keeps it off", cfg.Adapters.Telegram)
	}
}

func TestDotEnvFillsOnlyWhatTheEnvironmentLacks(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, EnvFileName, "# comment\nexport LLM_API_KEY=\"sk-dotenv\"\nLLM_MODEL=dotenv-model # trailing\nQQ_APP_ID=1\nQQ_APP_SECRET='s'\n")
	cfg, err := Load(dir, envOf(map[string]string{"LLM_MODEL": "real-env"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.LLM.APIKey != "sk-dotenv" || cfg.LLM.Model != "real-env" || cfg.LLM.Provider != llm.ProviderOpenAI {
		t.Errorf("llm = %+v: key from .env implies openai; the real environment wins for the model", cfg.LLM)
	}
	if !cfg.Adapters.QQ.On() || cfg.Adapters.Feishu.On() || cfg.Adapters.Telegram.On() {
		t.Errorf("adapters on: qq=%v feishu=%v telegram=%v", cfg.Adapters.QQ.On(), cfg.Adapters.Feishu.On(), cfg.Adapters.Telegram.On())
	}
}

func TestBadInputIsAClearErrorWithoutSecrets(t *testing.T) {
	cases := map[string]struct {
		file, env, want string
	}{
		"malformed json":  {file: `{"llm": `, want: "not valid JSON"},
		"unknown field":   {file: `{"llm": {"provider": "openai", "apikey_typo": "x"}}`, want: "apikey_typo"},
		"bad durability":  {file: `{"store": {"durability": "sometimes"}}`, want: "store.durability"},
		"bad port":        {env: "SHIP_PORT=http", want: "SHIP_PORT"},
		"bad level":       {env: "SHIP_LOG_LEVEL=loud", want: "SHIP_LOG_LEVEL"},
		"bad max tokens":  {env: "LLM_MAX_TOKENS=lots", want: "LLM_MAX_TOKENS"},
		"negative tokens": {file: `{"llm": {"maxTokens": -5}}`, want: "llm.maxTokens"},
		"huge max tokens": {env: "LLM_MAX_TOKENS=1000000", want: "between 1 and 128000"},
		"bad dotenv line": {file: "", env: "", want: ".env is not a list of KEY=VALUE lines"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if c.file != "" {
				write(t, dir, FileName, c.file)
			}
			env := map[string]string{}
			if k, v, ok := strings.Cut(c.env, "="); ok {
				env[k] = v
			}
			if name == "bad dotenv line" {
				write(t, dir, EnvFileName, "A=1\nsk-secret-value-without-key\n")
			}
			_, err := Load(dir, envOf(env))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one naming %q", err, c.want)
			}
			if strings.Contains(err.Error(), "sk-secret") {
				t.Errorf("error leaks a secret: %v", err)
			}
		})
	}
}

func TestMaxTokens(t *testing.T) {
	cfg, err := Load(t.TempDir(), envOf(nil))
	if err != nil || cfg.LLM.MaxTokens != llm.DefaultMaxTokens {
		t.Fatalf("default maxTokens = %d, %v; want %d", cfg.LLM.MaxTokens, err, llm.DefaultMaxTokens)
	}
	dir := t.TempDir()
	write(t, dir, FileName, `{"llm": {"maxTokens": 16000}}`)
	if cfg, err = Load(dir, envOf(nil)); err != nil || cfg.LLM.MaxTokens != 16000 {
		t.Fatalf("ship.json maxTokens = %d, %v", cfg.LLM.MaxTokens, err)
	}
	if cfg, err = Load(dir, envOf(map[string]string{"LLM_MAX_TOKENS": "4096"})); err != nil || cfg.LLM.MaxTokens != 4096 {
		t.Fatalf("LLM_MAX_TOKENS over ship.json: %d, %v", cfg.LLM.MaxTokens, err)
	}
}

func TestToolsSectionSplitsExecFromThePolicy(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, FileName, `{"tools": {
	  "exec": {"enabled": true, "timeoutSeconds": 10},
	  "allow": ["chat_*"],
	  "roles": {"admin": {"members": ["telegram:1"], "allow": ["exec_shell(git *)"], "approve": true}}
	}}`)
	cfg, err := Load(dir, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Tools.Exec.Enabled || cfg.Tools.Exec.TimeoutSeconds != 10 {
		t.Errorf("exec = %+v", cfg.Tools.Exec)
	}
	p, err := cfg.ToolPolicy()
	if err != nil {
		t.Fatal(err)
	}
	if !p.CanApprove("telegram:1") {
		t.Error("the role's approve flag was lost")
	}
}

func TestExecIsOffByDefault(t *testing.T) {
	cfg, err := Load(t.TempDir(), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Tools.Exec.Enabled {
		t.Error("exec_shell is on without ship.json saying so")
	}
	if cfg.Tools.Exec.SandboxMode() != SandboxAuto || cfg.Tools.Exec.Network {
		t.Errorf("sandbox %q, network %v; want auto and no network by default", cfg.Tools.Exec.SandboxMode(), cfg.Tools.Exec.Network)
	}
}

func TestExecSandboxSettings(t *testing.T) {
	for _, mode := range []string{SandboxAuto, SandboxRequired, SandboxOff} {
		dir := t.TempDir()
		write(t, dir, FileName, `{"tools": {"exec": {"enabled": true, "sandbox": "`+mode+`", "network": true}}}`)
		cfg, err := Load(dir, envOf(nil))
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if cfg.Tools.Exec.SandboxMode() != mode || !cfg.Tools.Exec.Network {
			t.Errorf("%s: %+v", mode, cfg.Tools.Exec)
		}
	}
}

func TestBadToolsSectionIsAClearError(t *testing.T) {
	for body, want := range map[string]string{
		`{"tools": {"exec": {"enable": true}}}`:                    `unknown field "enable"`,
		`{"tools": {"exec": {"timeoutSeconds": 99999}}}`:           "tools.exec timeouts",
		`{"tools": {"exec": {"sandbox": "on"}}}`:                   `tools.exec.sandbox must be "auto", "required" or "off", not "on"`,
		`{"tools": {"exec": {"network": "yes"}}}`:                  "tools.exec",
		`{"tools": {"roles": {"admin": {"aprove": true}}}}`:        `tools.roles.admin: unknown field "aprove"`,
		`{"tools": {"deny": ["exec_shell(rm *"]}}`:                 "tools",
		`{"tools": {"roles": {"admin": {"members": ["123456"]}}}}`: "members",
	} {
		dir := t.TempDir()
		write(t, dir, FileName, body)
		_, err := Load(dir, envOf(nil))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one mentioning %q", body, err, want)
		}
	}
}

func TestPolicyReloadsOnEditAndKeepsTheLastGoodOne(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, FileName, `{"tools": {"roles": {"admin": {"members": ["telegram:1"], "approve": true}}}}`)
	cfg, err := Load(dir, envOf(map[string]string{"ADMIN": "telegram:2"}))
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	f, err := NewPolicyFile(cfg, zerolog.New(&logs))
	if err != nil {
		t.Fatal(err)
	}
	if !f.Current().CanApprove("telegram:1") {
		t.Fatal("initial policy")
	}
	// An edit (with a ${VAR}, expanded as at start-up) applies at once.
	edit := func(body string, mod time.Time) {
		write(t, dir, FileName, body)
		if err := os.Chtimes(filepath.Join(dir, FileName), mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	base := time.Now().Add(time.Hour)
	edit(`{"tools": {"roles": {"admin": {"members": ["${ADMIN}"], "approve": true}}}}`, base)
	if p := f.Current(); p.CanApprove("telegram:1") || !p.CanApprove("telegram:2") {
		t.Fatal("the edit did not apply")
	}
	// A broken edit keeps the last good policy and logs one line, however
	// often it is asked.
	edit(`{"tools": {"roles": {"admin": {"aprove": true}}}}`, base.Add(time.Second))
	for range 3 {
		if !f.Current().CanApprove("telegram:2") {
			t.Fatal("a broken edit replaced the policy")
		}
	}
	if n := strings.Count(logs.String(), `"level":"error"`); n != 1 || !strings.Contains(logs.String(), "aprove") {
		t.Errorf("logged %d error lines: %s", n, logs.String())
	}
	edit(`{}`, base.Add(2*time.Second))
	if f.Current().CanApprove("telegram:2") {
		t.Error("removing the tools section kept the old roles")
	}
}
