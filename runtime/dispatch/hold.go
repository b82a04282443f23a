package dispatch

import (
	"context"
	"sync"
)

// Hold keeps the replies of a run instead of sending them: a run whose
// output is checked before it reaches the chat (the output guardrail)
// carries one, and the engine sends what passes the check. The tool that
// replied hears that its text was taken, as if sent.
type Hold struct {
	mu    sync.Mutex
	texts []string
}

type holdKey struct{}

// WithHold returns ctx whose replies h keeps.
func WithHold(ctx context.Context, h *Hold) context.Context {
	return context.WithValue(ctx, holdKey{}, h)
}

// WithoutHold returns ctx whose replies are sent again: the engine's own
// sends of a checked run.
func WithoutHold(ctx context.Context) context.Context {
	return context.WithValue(ctx, holdKey{}, (*Hold)(nil))
}

func holdFrom(ctx context.Context) *Hold {
	h, _ := ctx.Value(holdKey{}).(*Hold)
	return h
}

func (h *Hold) keep(text string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.texts = append(h.texts, text)
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
