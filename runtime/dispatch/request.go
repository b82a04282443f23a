// Package dispatch routes a reply back to where its message came from: the
// RequestContext a run carries, the Registry of per-channel Dispatchers the
// platforms are registered in, and the Deliverer that sends through them,
// logs what was delivered and applies the final-output fallback.
package dispatch

import (
	"context"

	"github.com/shipmyagent/ship/runtime/turn"
)

// RequestContext says where the message being handled came from, so that a
// reply sent from deep inside a tool call finds its way back to the same chat,
// topic and message: a turn's Route. It is request data, and travels in a
// context.Context (see WithRequest).
type RequestContext = turn.Route

// WithRequest returns a context whose run's replies go to req.
func WithRequest(ctx context.Context, req RequestContext) context.Context {
	return with(ctx, func(r *Run) { r.Request = req })
}

// RequestFromContext returns where the replies of ctx's run go, if it is
// inside one.
func RequestFromContext(ctx context.Context) (RequestContext, bool) {
	r, ok := RunFrom(ctx)
	return r.Request, ok && r.Request != (RequestContext{})
}
