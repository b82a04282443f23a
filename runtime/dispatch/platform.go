package dispatch

// What differs between platforms in how people reach the bot and how the
// bot may post reaches the core through these optional interfaces, which a
// platform's dispatcher implements and the core finds by type assertion
// (like Streamer and Typist). The core then holds no platform names: a new
// platform says what it needs by implementing them, without a change to the
// core.

// ReplyAddressed is a Dispatcher whose platform hands the bot a group
// message that replies to one of the bot's own messages as addressed to the
// bot, as it does a mention (Telegram). Where it is missing, groups reach
// the bot by mentions only (Feishu and QQ deliver nothing else). /help tells
// people which way works.
type ReplyAddressed interface {
	// RepliesAddressBot marks the capability; it does nothing.
	RepliesAddressBot()
}

// ReplyAddressesBot reports whether a reply to the bot's message addresses
// it in the groups of d's platform (see ReplyAddressed).
func ReplyAddressesBot(d Dispatcher) bool {
	_, ok := d.(ReplyAddressed)
	return ok
}

// TaskRouter is a Dispatcher whose platform decides how a message ship
// posts on its own, not in answer to a message being handled (a scheduled
// task's result), reaches a chat. Some platforms take a bot's message only
// as a reply to a person's recent one, or reach a thread only by a reply in
// it; elsewhere the post is a new message in the chat, topic or thread, not
// a reply to anyone (see TaskRoute).
type TaskRouter interface {
	// TaskRoute returns the route of such a post into the chat whose latest
	// message from a person came by last (its MessageID set).
	TaskRoute(last RequestContext) RequestContext
}

// TaskRoute is the route of a post ship makes on its own into the chat
// whose latest message from a person came by last: d's own rule where d is
// a TaskRouter, else a new message in last's chat, topic or thread (last
// without its MessageID).
func TaskRoute(d Dispatcher, last RequestContext) RequestContext {
	if r, ok := d.(TaskRouter); ok {
		return r.TaskRoute(last)
	}
	last.MessageID = ""
	return last
}

// ReplyWindowed is a Dispatcher whose platform takes a bot's post only
// within a window after a person's message (QQ's passive replies). When
// such a post is refused, the person reading why (a task's result) is told
// the platform's rule, since it is the platform's and not ship's.
type ReplyWindowed interface {
	// ReplyWindowHint says, in one clause, when the platform takes a
	// bot's message in route's chat ("" when there is nothing to add).
	ReplyWindowHint(route RequestContext) string
}

// ReplyWindowHint is d's ReplyWindowHint for route, or "" where d's
// platform has no reply window.
func ReplyWindowHint(d Dispatcher, route RequestContext) string {
	if w, ok := d.(ReplyWindowed); ok {
		return w.ReplyWindowHint(route)
	}
	return ""
}
