package dispatch

import (
	"context"
	"sync"

	"github.com/shipmyagent/ship/runtime/turn"
)

// Hold is the output guardrail's grip on a run's replies. Every run
// carries one; once armed with an output check (by a scheduled task's
// schema when the run starts, or by a skill with a schema when it is
// loaded) the run's replies are kept instead of sent, and the engine sends
// what passes the check when the run ends. The tool that replied hears that
// its text was taken, as if sent. Replies sent before the hold was armed
// went out as usual: they were not the checked output.
type Hold struct {
	mu    sync.Mutex
	check *turn.OutputCheck
	texts []string
}

// WithHold returns ctx whose replies h may keep.
func WithHold(ctx context.Context, h *Hold) context.Context {
	return with(ctx, func(r *Run) { r.Hold = h })
}

// WithoutHold returns ctx whose replies are sent whatever its hold: the
// engine's own sends of a checked run.
func WithoutHold(ctx context.Context) context.Context { return WithHold(ctx, nil) }

// HoldFrom returns the hold of ctx's run, nil outside a run.
func HoldFrom(ctx context.Context) *Hold {
	r, _ := RunFrom(ctx)
	return r.Hold
}

// Arm makes the run's output subject to c from now on; a later Arm (a
// second skill) replaces the check.
func (h *Hold) Arm(c turn.OutputCheck) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.check = &c
}

// Check returns the check the hold is armed with.
func (h *Hold) Check() (turn.OutputCheck, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.check == nil {
		return turn.OutputCheck{}, false
	}
	return *h.check, true
}

// keep keeps text if the hold is armed, and says whether it did.
func (h *Hold) keep(text string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.check == nil {
		return false
	}
	h.texts = append(h.texts, text)
	return true
}

// Take returns the texts kept since the last Take, in order, and forgets
// them.
func (h *Hold) Take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.texts
	h.texts = nil
	return t
}
