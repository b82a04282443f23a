package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/ingress"
)

// codeBudgetExceeded answers a message refused for a daily token budget
// (limits.tokens): the code the refusal names itself.
const codeBudgetExceeded = "BUDGET_EXCEEDED"

// usageStatus is today's token usage for GET /api/status; nil when ship
// counts no tokens.
func (s *Server) usageStatus(ctx context.Context) *engine.UsageReport {
	u, ok := s.opts.View.Usage(ctx, "")
	if !ok {
		return nil
	}
	return &u
}

// writeBudgetError answers a submission refused for its token budget with
// 429, the refusal's words and, when the refusal says so, Retry-After up to
// the reset; it reports whether err was one.
func writeBudgetError(w http.ResponseWriter, r *http.Request, err error) bool {
	if ingress.RefusalCode(err) != codeBudgetExceeded {
		return false
	}
	var reset interface{ RetryAt() time.Time }
	if errors.As(err, &reset) {
		// The refusal's own clock (the engine's) decided the day; the wait
		// is counted from this one, never below a second.
		secs := max(int64(time.Until(reset.RetryAt())/time.Second), 1)
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	}
	writeError(w, r, http.StatusTooManyRequests, codeBudgetExceeded, err.Error()+" (nothing was recorded)")
	return true
}
