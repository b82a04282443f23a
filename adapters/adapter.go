// Package adapters is the contract between ship's core and its platforms
// (Telegram, Feishu, QQ): the Adapter a platform implements, the Host it is
// given instead of the engine, optional capabilities only some platforms
// have, and the pieces every platform's handler shares (Intake, Workers,
// retry waits, status).
package adapters

import (
	"context"
	"sync"

	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/ingress"
)

// Adapter is one platform connection. It is also the channel's
// dispatch.Dispatcher: the binary registers it for its channel, and replies
// to that channel's messages go out through SendText.
type Adapter interface {
	// Name is the channel name ("telegram").
	Name() string
	// Run connects and serves until ctx is cancelled, then returns nil;
	// long polls and websockets end with ctx, and every goroutine the
	// adapter started has ended. An error means the adapter gave up (a bad
	// token, say).
	Run(ctx context.Context) error
	// GateConnection makes Run hold the platform's single long connection
	// only when g lets it (cluster mode: one replica at a time), while the
	// rest of Run (sending, webhooks, background work) goes on regardless.
	// Call it before Run; nil (the default) connects at once.
	GateConnection(g Gate)
	// Status reports the adapter's state for /api/status.
	Status() Status
	// SendText delivers text into the chat of req (a reply to its message
	// where the platform threads replies). It reports a failed delivery.
	SendText(ctx context.Context, req dispatch.RequestContext, text string) error
}

// Host is what a platform may ask of ship's core. The engine implements it;
// a platform never sees more of the core than this.
type Host interface {
	// Accept takes a message addressed to the bot: logged, checked against
	// re-delivery (ingress.ErrDuplicate) and the per-user limit, and
	// queued. Once it returns without error the platform may acknowledge.
	Accept(ctx context.Context, s ingress.Submission) (ingress.Ticket, error)
	// Record logs a message not addressed to the bot, once.
	Record(ctx context.Context, s ingress.Submission) error
	// Position reports where an accepted message stands (0: running).
	Position(id string) (int, bool)
	// Command answers one of the core's chat commands (/start, /help,
	// /status, /clear, /approve CODE, /deny CODE) at once; args is the text
	// after the command's name. ok is false for any other name: the message
	// then goes to the agent like any other.
	Command(ctx context.Context, name, args string, req dispatch.RequestContext) (reply string, ok bool)
}

// Optional capabilities: a platform that can do more than send text says so
// by implementing these, and callers find them by type assertion.
type (
	// Streamer shows a reply while the model writes it
	// (dispatch.Streamer).
	Streamer = dispatch.Streamer
	// Typist shows that the bot is working on a message
	// (dispatch.Typist).
	Typist = dispatch.Typist
	// ButtonSender sends text with buttons (dispatch.ButtonSender: the
	// core finds it on the registered dispatcher).
	ButtonSender = dispatch.ButtonSender
	// ReplyAddressed: in groups a reply to the bot's message reaches it
	// as a mention does (dispatch.ReplyAddressed; /help says so).
	ReplyAddressed = dispatch.ReplyAddressed
	// TaskRouter decides how a post ship makes on its own, such as a
	// scheduled task's result, reaches a chat (dispatch.TaskRouter).
	TaskRouter = dispatch.TaskRouter
	// ReplyWindowed explains a platform's reply window when such a post
	// is refused (dispatch.ReplyWindowed).
	ReplyWindowed = dispatch.ReplyWindowed
)

// Status is an adapter's state as /api/status shows it.
type Status struct {
	Name   string `json:"name"`
	State  string `json:"state"` // starting | running | reconnecting | standby | stopped | failed | unavailable
	Detail string `json:"detail,omitempty"`
}

// StatusBox holds an adapter's Status for concurrent readers.
type StatusBox struct {
	mu sync.Mutex
	s  Status
}

// Set replaces the status.
func (b *StatusBox) Set(name, state, detail string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.s = Status{Name: name, State: state, Detail: detail}
}

// Get returns the status.
func (b *StatusBox) Get() Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.s
}
