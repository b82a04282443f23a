package config

import (
	"fmt"

	"github.com/shipmyagent/ship/runtime/usage"
)

// LimitsConfig is ship.json's limits section.
type LimitsConfig struct {
	Tokens TokenLimits `json:"tokens"`
}

// TokenLimits are the daily token budgets (input plus output tokens, per
// UTC day); 0 or absent is no limit.
type TokenLimits struct {
	// PerUserPerDay caps one person (a policy identity, "telegram:42"),
	// all chats together; PerChatPerDay caps one chat, everyone together.
	PerUserPerDay int64 `json:"perUserPerDay,omitempty"`
	PerChatPerDay int64 `json:"perChatPerDay,omitempty"`
	// ExemptRoles are tool-policy roles (tools.roles) never refused.
	ExemptRoles []string `json:"exemptRoles,omitempty"`
}

// Budget is the budgets as the engine applies them.
func (t TokenLimits) Budget() usage.Budget {
	return usage.Budget{PerUserPerDay: t.PerUserPerDay, PerChatPerDay: t.PerChatPerDay, ExemptRoles: t.ExemptRoles}
}

func (l LimitsConfig) validate() error {
	t := l.Tokens
	if t.PerUserPerDay < 0 || t.PerChatPerDay < 0 {
		return fmt.Errorf("%w: limits.tokens.perUserPerDay and perChatPerDay must be 0 (no limit) or more, not %d and %d",
			ErrInvalid, t.PerUserPerDay, t.PerChatPerDay)
	}
	for _, r := range t.ExemptRoles {
		if r == "" {
			return fmt.Errorf("%w: limits.tokens.exemptRoles: an empty role name", ErrInvalid)
		}
	}
	return nil
}
