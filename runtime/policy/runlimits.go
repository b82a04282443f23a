package policy

import (
	"errors"
	"fmt"
	"strings"
	"sync"
)

// RunLimits is what a run's own tools may tighten while it runs: a skill
// with allowed-tools limits the rest of the run to those tools. Limits only
// ever narrow; each Limit must be met together with every earlier one.
// It is safe for concurrent use.
type RunLimits struct {
	mu   sync.Mutex
	sets []limit
}

type limit struct {
	by    string // who set it ("skill deploy"), for the refusal
	rules []rule
}

// ErrNoRun is returned by a tool that would limit its run outside a
// governed run.
var ErrNoRun = errors.New("not inside a governed run")

// Limit limits the rest of the run to the tools allowed names (rules like
// "exec_shell(git *)" or "mcp.github.*"); by says who asked. Tools named
// chat_* stay allowed: the run must still be able to answer. A rule that
// does not parse is an error and changes nothing.
func (l *RunLimits) Limit(by string, allowed []string) error {
	rs, err := ruleList(allowed, by+" allowed tools")
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sets = append(l.sets, limit{by: by, rules: rs})
	return nil
}

// Check reports whether the limits let the call run, and if not why.
// An argument pattern must match every part of a command, as an allow
// rule must.
func (l *RunLimits) Check(c Call) (ok bool, reason string) {
	if l == nil || strings.HasPrefix(c.Tool, "chat_") {
		return true, ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	cmd := parseCommand(c.Arg)
	for _, set := range l.sets {
		if !set.allows(c.Tool, cmd) {
			names := make([]string, len(set.rules))
			for i, r := range set.rules {
				names[i] = r.text
			}
			return false, fmt.Sprintf("%s limits this run to %s", set.by, strings.Join(names, ", "))
		}
	}
	return true, ""
}

// Offers reports whether the limits leave the tool usable at all.
func (l *RunLimits) Offers(tool string) bool {
	if l == nil || strings.HasPrefix(tool, "chat_") {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, set := range l.sets {
		named := false
		for _, r := range set.rules {
			named = named || r.matchTool(tool)
		}
		if !named {
			return false
		}
	}
	return true
}

func (s limit) allows(tool string, cmd command) bool {
	for _, u := range cmd.units() {
		covered := false
		for _, r := range s.rules {
			if r.matchTool(tool) && r.covers(u) {
				covered = true
				break
			}
		}
		if !covered {
			return false
		}
	}
	return true
}
