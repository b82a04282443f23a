package usage

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Budget is limits.tokens: how many tokens (input plus output) one person
// and one chat may use in a UTC day. Zero is no limit.
type Budget struct {
	PerUserPerDay int64
	PerChatPerDay int64
	// ExemptRoles are tool-policy roles whose members are never refused.
	ExemptRoles []string
}

// On reports whether any budget is set.
func (b Budget) On() bool { return b.PerUserPerDay > 0 || b.PerChatPerDay > 0 }

// Exempt reports whether one of roles is exempt.
func (b Budget) Exempt(roles []string) bool {
	for _, r := range roles {
		if slices.Contains(b.ExemptRoles, r) {
			return true
		}
	}
	return false
}

// RefusalCode is the error code a budget refusal is reported with (events,
// API answers).
const RefusalCode = "BUDGET_EXCEEDED"

// ExceededError refuses a turn because a daily token budget is used up.
type ExceededError struct {
	// Chat says the chat's budget is used up; otherwise the person's.
	Chat        bool
	Used, Limit int64
	// ResetAt is when the window ends (the next 00:00 UTC).
	ResetAt time.Time
}

func (e *ExceededError) Error() string {
	return "today's token budget is used up (" + e.detail() + "); it resets at 00:00 UTC"
}

func (e *ExceededError) detail() string {
	whose := "your"
	if e.Chat {
		whose = "this chat's"
	}
	return fmt.Sprintf("%d of %s %d tokens a day", e.Used, whose, e.Limit)
}

// Reply is what the chat is told.
func (e *ExceededError) Reply() string {
	return "You have used today's token budget (" + e.detail() + "); it resets at 00:00 UTC."
}

// RefusalCode names the refusal (ingress.RefusalCode reads it).
func (e *ExceededError) RefusalCode() string { return RefusalCode }

// RetryAt is when a turn would be taken again.
func (e *ExceededError) RetryAt() time.Time { return e.ResetAt }

// Check refuses a turn of chatKey asked by person (with roles) when a
// budget of today is used up; nil lets it in.
func (t *Tally) Check(ctx context.Context, b Budget, chatKey, person string, roles []string) error {
	if !b.On() || b.Exempt(roles) {
		return nil
	}
	chatUsed, personUsed := t.Today(ctx, chatKey, person)
	reset := ResetAt(t.now())
	if b.PerUserPerDay > 0 && person != "" && personUsed.Total() >= b.PerUserPerDay {
		return &ExceededError{Used: personUsed.Total(), Limit: b.PerUserPerDay, ResetAt: reset}
	}
	if b.PerChatPerDay > 0 && chatUsed.Total() >= b.PerChatPerDay {
		return &ExceededError{Chat: true, Used: chatUsed.Total(), Limit: b.PerChatPerDay, ResetAt: reset}
	}
	return nil
}
