package dispatch

import (
	"context"
	"sync"
)

// WireHooked is implemented by dispatchers that pace their sends (Telegram
// waits for a chat's turn, about one message a second) and call BeforeWire
// themselves once the wait is over. The Deliverer then records the intent
// to reply (the journal's send record) right before the request goes out,
// not before the wait: after a crash, a reply whose intent is recorded is
// never sent again, so the shorter the gap between the record and the
// request, the fewer answers a crash can cost.
type WireHooked interface {
	CallsBeforeWire()
}

type wireHookKey struct{}

// wireHook runs the Deliverer's BeforeSend at most once per delivery.
type wireHook struct {
	once sync.Once
	fn   func(ctx context.Context) error
	err  error
}

func (h *wireHook) run(ctx context.Context) error {
	h.once.Do(func() { h.err = h.fn(ctx) })
	return h.err
}

// BeforeWire runs what must happen right before a reply's first request
// goes out (see WireHooked); it does nothing outside a delivery. A
// dispatcher that gets an error must send nothing and return it.
func BeforeWire(ctx context.Context) error {
	if h, ok := ctx.Value(wireHookKey{}).(*wireHook); ok {
		return h.run(ctx)
	}
	return nil
}
