package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/runtime/config"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestInitWritesALoadableProjectAndRefusesToOverwrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bot")
	if code, _, stderr := runCLI(t, "init", dir, "--provider", "offline", "--telegram"); code != 0 {
		t.Fatalf("init: exit %d: %s", code, stderr)
	}
	for _, name := range []string{"Agent.md", "ship.json", ".ship/chats", ".ship/.gitignore"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s missing: %v", name, err)
		}
	}
	// The state folder keeps chat logs out of the user's git repository.
	if b, _ := os.ReadFile(filepath.Join(dir, ".ship", ".gitignore")); !strings.Contains(string(b), "\n*\n") {
		t.Errorf(".ship/.gitignore = %q, want it to ignore everything", b)
	}
	cfg, err := config.Load(dir, func(k string) (string, bool) {
		if k == "TELEGRAM_BOT_TOKEN" {
			return "123:abc", true
		}
		return "", false
	})
	if err != nil {
		t.Fatalf("ship.json written by init does not load: %v", err)
	}
	if cfg.LLM.Provider != "offline" || !cfg.Adapters.Telegram.On() || cfg.Adapters.Feishu.On() {
		t.Errorf("loaded %+v", cfg)
	}
	// The environment still wins over what init wrote.
	cfg, _ = config.Load(dir, func(k string) (string, bool) {
		if k == "LLM_PROVIDER" {
			return "anthropic", true
		}
		return "", false
	})
	if cfg.LLM.Provider != "anthropic" {
		t.Errorf("LLM_PROVIDER did not win over ship.json: %q", cfg.LLM.Provider)
	}

	if err := os.WriteFile(filepath.Join(dir, "Agent.md"), []byte("my own instructions"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "init", dir)
	if code == 0 || !strings.Contains(stderr, "--force") {
		t.Fatalf("second init: exit %d, stderr %q, want a refusal naming --force", code, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "Agent.md")); string(b) != "my own instructions" {
		t.Error("a refused init changed Agent.md")
	}
	if code, _, stderr := runCLI(t, "init", dir, "--force"); code != 0 {
		t.Fatalf("init --force: exit %d: %s", code, stderr)
	}
}

func TestInitInAnExistingEmptyFolderAndBadFlags(t *testing.T) {
	dir := t.TempDir()
	if code, stdout, stderr := runCLI(t, "init", dir); code != 0 || !strings.Contains(stdout, "ship start") {
		t.Fatalf("init into an empty folder: exit %d, %q %q", code, stdout, stderr)
	}
	code, _, stderr := runCLI(t, "init", t.TempDir(), "--provider", "gpt")
	if code == 0 || !strings.Contains(stderr, "openai, anthropic or offline") {
		t.Errorf("bad provider: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "start", filepath.Join(dir, "missing")); code == 0 || !strings.Contains(stderr, "ship init") {
		t.Errorf("start in a missing folder: exit %d, %q", code, stderr)
	}
}

func TestEverySubcommandHasHelp(t *testing.T) {
	for _, sub := range []string{"init", "start", "version"} {
		code, stdout, _ := runCLI(t, sub, "--help")
		if code != 0 || !strings.Contains(stdout, "Usage:") || len(stdout) < 200 && sub != "version" {
			t.Errorf("%s --help: exit %d, %q", sub, code, stdout)
		}
	}
}
