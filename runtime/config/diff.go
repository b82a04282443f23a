package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Diff names the settings that differ between old and new, as dotted
// ship.json paths ("llm.model", "mcp.servers.github",
// "adapters.telegram.allowedChatIds"), sorted. It names settings only,
// never their values: the list is logged and shown, and values may be
// secrets. A list or an MCP server is named as a whole.
func Diff(old, new Config) ([]string, error) {
	a, err := tree(old)
	if err != nil {
		return nil, err
	}
	b, err := tree(new)
	if err != nil {
		return nil, err
	}
	var out []string
	diffTree("", a, b, &out)
	slices.Sort(out)
	return out, nil
}

// tree is c as ship.json's generic JSON shape.
func tree(c Config) (map[string]any, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("comparing configurations: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("comparing configurations: %w", err)
	}
	return m, nil
}

func diffTree(path string, a, b any, out *[]string) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if !aok || !bok || whole(path) {
		if !reflect.DeepEqual(a, b) {
			*out = append(*out, path)
		}
		return
	}
	keys := map[string]bool{}
	for k := range am {
		keys[k] = true
	}
	for k := range bm {
		keys[k] = true
	}
	for k := range keys {
		p := k
		if path != "" {
			p = path + "." + k
		}
		diffTree(p, am[k], bm[k], out)
	}
}

// whole reports whether path is compared as one setting: an MCP server
// (mcp.servers.<name>) restarts on any change of its own, whichever field
// it was.
func whole(path string) bool {
	name, ok := strings.CutPrefix(path, "mcp.servers.")
	return ok && !strings.Contains(name, ".")
}

// liveSettings are the settings a running ship takes on at a reload
// (prefixes of Diff's names); every other change needs a restart. The
// models, the MCP servers, exec_shell's limits and sandbox, the skill
// folders, the tool policy and the platforms' allowlists and formatting
// switches reload; what opens a listener, a platform connection, a store
// or a cluster does not.
var liveSettings = []string{"llm.", "mcp.", "skills.", "tools.",
	// What a running platform adapter can change (its Reconfigure).
	"adapters.telegram.allowedChatIds", "adapters.telegram.allowedUserIds", "adapters.telegram.requireMention",
	"adapters.telegram.streaming", "adapters.feishu.allowedChatIds", "adapters.feishu.allowedUserIds",
	"adapters.feishu.streaming", "adapters.qq.allowedChatIds", "adapters.qq.allowedUserIds", "adapters.qq.markdown",
	"adapters.qq.streaming"}

// restartSettings win over liveSettings: they sit inside a live section
// but are read once at start-up.
var restartSettings = []string{
	"tools.exec.enabled", // the tool list is made once
	"tools.jobs.off",     // the jobs manager is made (or not) once
	"tools.agents.",      // agent_spawn's limits are made once
}

// NeedsRestart returns the settings of changed (Diff's names) that a
// running ship does not take on until it is restarted.
func NeedsRestart(changed []string) []string {
	var out []string
	for _, s := range changed {
		if !live(s) {
			out = append(out, s)
		}
	}
	return out
}

func live(setting string) bool {
	for _, p := range restartSettings {
		if setting == p || strings.HasPrefix(setting, p) || setting+"." == p {
			return false
		}
	}
	for _, p := range liveSettings {
		if setting == p || strings.HasPrefix(setting, p) && strings.HasSuffix(p, ".") || setting+"." == p {
			return true
		}
	}
	return false
}

// Changed reports whether any of the settings is section or lies under
// it ("llm" covers "llm.models.fast").
func Changed(settings []string, section string) bool {
	return slices.ContainsFunc(settings, func(s string) bool {
		return s == section || strings.HasPrefix(s, section+".")
	})
}
