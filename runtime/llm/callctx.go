package llm

import "context"

// call is what one model call hands its HTTP doer through the request's
// context, under one key: the top_p the OpenAI client leaves out of the
// body, the stream tap of a streamed Claude call and where a Claude call's
// cache breakpoints go. (The SDK's clients
// take no other way in between the call's options and the wire.)
type call struct {
	topP   float64       // > 0: write it into the body (bodyDoer)
	stream *streamedCall // tap the event stream (sseDoer)
	cache  *cachePlan    // mark cache breakpoints in the body (sseDoer)
}

type callKey struct{}

// withCall returns ctx carrying the call set changes.
func withCall(ctx context.Context, set func(*call)) context.Context {
	c, _ := ctx.Value(callKey{}).(call)
	set(&c)
	return context.WithValue(ctx, callKey{}, c)
}

// callFrom returns what ctx carries for the doer; the zero call when none.
func callFrom(ctx context.Context) call {
	c, _ := ctx.Value(callKey{}).(call)
	return c
}
