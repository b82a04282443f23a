package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/runtime/llm"
)

type initFlags struct {
	provider, model, baseURL string
	telegram, feishu, qq     bool
	force                    bool
}

func newInitCmd() *cobra.Command {
	var f initFlags
	cmd := &cobra.Command{
		Use:   "init [dir]",
		Short: "Create Agent.md, ship.json and .ship/ in a project folder",
		Long: `init writes a minimal project into dir (default: the current folder), which may be new
or an existing empty folder:

  Agent.md    your standing instructions to the agent (edit freely; re-read on every message)
  ship.json   settings; secrets are "${VAR}" references read from the environment or .env
  .ship/      state: chat logs, caches, logs (with a .gitignore that keeps them out of git)

Environment variables always win over ship.json. init refuses to overwrite an existing
Agent.md or ship.json unless --force is given.`,
		Example: `  ship init mybot
  ship init mybot --provider openai --model gpt-4o-mini --telegram
  ship init . --provider offline`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			return runInit(cmd, dir, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.provider, "provider", "", "model provider written to ship.json: openai, anthropic or offline (default: from LLM_PROVIDER)")
	fl.StringVar(&f.model, "model", "", "model name written to ship.json (default: from LLM_MODEL)")
	fl.StringVar(&f.baseURL, "base-url", "", "OpenAI-compatible base URL ending in /v1 (default: from LLM_BASE_URL)")
	fl.BoolVar(&f.telegram, "telegram", false, "add a Telegram section reading TELEGRAM_BOT_TOKEN")
	fl.BoolVar(&f.feishu, "feishu", false, "add a Feishu/Lark section reading FEISHU_APP_ID and FEISHU_APP_SECRET")
	fl.BoolVar(&f.qq, "qq", false, "add a QQ section reading QQ_APP_ID and QQ_APP_SECRET")
	fl.BoolVar(&f.force, "force", false, "overwrite an existing Agent.md and ship.json")
	return cmd
}

const defaultAgentMD = `# Agent

You are a helpful assistant for this team. Answer clearly and briefly, in the language
the user writes in. When you are unsure, say so instead of guessing.

<!-- ship re-reads this file on every message: edit it to change how the agent behaves. -->
`

// stateGitignore keeps everything under .ship/ out of git but the file itself.
const stateGitignore = `# ship's state: chat logs, caches, downloads and logs. Never commit them.
*
!.gitignore
`

func runInit(cmd *cobra.Command, dir string, f initFlags) error {
	if f.provider != "" {
		if err := (llm.Config{Provider: f.provider, APIKey: "x"}).Validate(); errors.Is(err, llm.ErrUnknownProvider) {
			return fmt.Errorf("--provider %q: use openai, anthropic or offline", f.provider)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	files := map[string][]byte{
		config.AgentMDName: []byte(defaultAgentMD),
		config.FileName:    shipJSON(f),
	}
	if !f.force {
		for name := range files {
			if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
				return fmt.Errorf("%s already exists in %s: pass --force to overwrite it", name, dir)
			}
		}
	}
	for _, sub := range []string{"chats", "logs", ".cache"} {
		if err := os.MkdirAll(filepath.Join(dir, config.StateDir, sub), 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", config.StateDir, err)
		}
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	// Chat logs, caches and downloads hold what people wrote: they must not
	// end up in the repository of a project kept in git.
	ignore := filepath.Join(dir, config.StateDir, ".gitignore")
	if _, err := os.Stat(ignore); errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(ignore, []byte(stateGitignore), 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", ignore, err)
		}
	}
	w := cmd.OutOrStdout()
	abs, _ := filepath.Abs(dir)
	fmt.Fprintf(w, "Created %s, %s and %s/ in %s\n", config.AgentMDName, config.FileName, config.StateDir, abs)
	fmt.Fprintf(w, "Next: ship start %s --offline   (or set LLM_API_KEY for a real model)\n", dir)
	return nil
}

// shipJSON is the minimal ship.json: secrets are "${VAR}" references so the
// file can be committed, and nothing in it overrides the environment.
func shipJSON(f initFlags) []byte {
	orEnv := func(v, env string) string {
		if v != "" {
			return v
		}
		return "${" + env + "}"
	}
	doc := map[string]any{
		"llm": map[string]any{
			"provider": orEnv(f.provider, "LLM_PROVIDER"),
			"model":    orEnv(f.model, "LLM_MODEL"),
			"baseUrl":  orEnv(f.baseURL, "LLM_BASE_URL"),
			"apiKey":   "${LLM_API_KEY}",
		},
		"server": map[string]any{"host": config.DefaultHost, "port": config.DefaultPort, "token": "${SHIP_API_TOKEN}"},
		"queue":  map[string]any{"capacity": config.DefaultQueueCapacity, "concurrency": 1},
	}
	adapters := map[string]any{}
	if f.telegram {
		adapters["telegram"] = map[string]any{"botToken": "${TELEGRAM_BOT_TOKEN}"}
	}
	if f.feishu {
		adapters["feishu"] = map[string]any{"appId": "${FEISHU_APP_ID}", "appSecret": "${FEISHU_APP_SECRET}"}
	}
	if f.qq {
		adapters["qq"] = map[string]any{"appId": "${QQ_APP_ID}", "appSecret": "${QQ_APP_SECRET}"}
	}
	if len(adapters) > 0 {
		doc["adapters"] = adapters
	}
	b, _ := json.MarshalIndent(doc, "", "  ") // a map of strings and ints always encodes
	return append(b, '\n')
}
