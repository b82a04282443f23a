package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/chat"
)

// Dispatcher delivers user-visible text to one platform. Adapters register
// one per channel; SendText must report a failed delivery as an error, since
// the model is told the truth about whether its reply arrived.
type Dispatcher interface {
	SendText(ctx context.Context, req RequestContext, text string) error
}

// ButtonSender is a Dispatcher that can also send text with buttons into
// req's chat and topic. A press comes back as the command the button's
// Data spells ("/approve CODE"), from the person who pressed it.
type ButtonSender interface {
	SendButtons(ctx context.Context, req RequestContext, text string, buttons []Button) error
}

// Button is one button of a message sent with buttons (approve, deny).
type Button struct {
	Text string
	// Data comes back when the button is pressed (at most 64 bytes).
	Data string
}

// DispatcherFunc adapts a function to the Dispatcher interface.
type DispatcherFunc func(ctx context.Context, req RequestContext, text string) error

// SendText calls f.
func (f DispatcherFunc) SendText(ctx context.Context, req RequestContext, text string) error {
	return f(ctx, req, text)
}

// Errors returned by Deliver; callers tell the model which one happened.
var (
	ErrNoRequest    = errors.New("no request context: nowhere to send")
	ErrNoDispatcher = errors.New("no dispatcher for channel")
)

// Registry maps channel names to dispatchers. It is safe for concurrent use.
type Registry struct {
	mu sync.RWMutex
	m  map[string]Dispatcher
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{m: make(map[string]Dispatcher)} }

// Register sets the dispatcher of channel, replacing any earlier one.
func (r *Registry) Register(channel string, d Dispatcher) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[channel] = d
}

// Lookup returns the dispatcher of channel.
func (r *Registry) Lookup(channel string) (Dispatcher, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	d, ok := r.m[channel]
	return d, ok
}

// SendText sends a note of ship's own (not the model's reply: nothing is
// logged) into the chat of req, through its channel's dispatcher.
func (r *Registry) SendText(ctx context.Context, req RequestContext, text string) error {
	d, ok := r.Lookup(req.Channel)
	if !ok {
		return fmt.Errorf("sending to %q: %w", req.Channel, ErrNoDispatcher)
	}
	return d.SendText(ctx, req, text)
}

// SendButtons is SendText with buttons, where the channel's dispatcher can
// show them; elsewhere the text goes alone.
func (r *Registry) SendButtons(ctx context.Context, req RequestContext, text string, buttons []Button) error {
	d, ok := r.Lookup(req.Channel)
	if !ok {
		return fmt.Errorf("sending to %q: %w", req.Channel, ErrNoDispatcher)
	}
	if bs, ok := d.(ButtonSender); ok {
		return bs.SendButtons(ctx, req, text, buttons)
	}
	return d.SendText(ctx, req, text)
}

// ChatSendTool is the name of the tool the model replies with. Its "text"
// argument is what the user sees, so the event stream shows it while the
// model is still writing it.
const ChatSendTool = "chat_send"

// Ways a reply was delivered, recorded in the assistant entry's meta.via.
const (
	ViaChatSend = ChatSendTool
	ViaFallback = "fallback"
)

// Deliverer sends replies through a Registry and logs each delivered one as
// an assistant entry. The chat_send tool and the final-output fallback share
// one, built once at start-up.
type Deliverer struct {
	Registry *Registry
	// Store, when set, receives an assistant entry per delivered reply.
	Store chat.Log
	// BeforeSend, when set, runs before every send and a failure sends
	// nothing. The engine records the intent to reply in its journal here,
	// so that after a crash a message whose reply may have gone out is never
	// answered again.
	BeforeSend func(ctx context.Context) error
}

// Deliver sends text to the chat of the request carried by ctx, then logs
// it as an assistant entry. The entry is written only after the platform
// accepted the text, so the log never claims a reply the user did not get.
func (d *Deliverer) Deliver(ctx context.Context, text, via string) error {
	_, err := d.DeliverReport(ctx, text, via)
	return err
}

// DeliverReport is Deliver that also returns what the platform reported
// about the delivery (a Reporter's Delivery; zero for other dispatchers).
// The assistant entry holds the text as the user got it, with the notices
// in its meta. A refusal by the platform's reply rules is noted in the
// run's Refusals, if ctx carries one.
func (d *Deliverer) DeliverReport(ctx context.Context, text, via string) (Delivery, error) {
	if h := HoldFrom(ctx); h != nil && h.keep(text) {
		// A checked output: the engine sends it once it passed (Hold).
		return Delivery{}, nil
	}
	req, ok := RequestFromContext(ctx)
	if !ok || req.Channel == "" {
		noteSend(ctx, ErrNoRequest)
		return Delivery{}, ErrNoRequest
	}
	disp, ok := d.Registry.Lookup(req.Channel)
	if !ok {
		err := fmt.Errorf("delivering to %s: %w", req.Channel, ErrNoDispatcher)
		noteSend(ctx, err)
		return Delivery{}, err
	}
	live := LiveFromContext(ctx)
	var stream ReplyStream
	if live != nil {
		stream = live.take(ctx, via)
	}
	var hook *wireHook
	if _, paced := disp.(WireHooked); paced && d.BeforeSend != nil {
		hook = &wireHook{fn: d.BeforeSend}
		ctx = context.WithValue(ctx, wireHookKey{}, hook)
	} else if d.BeforeSend != nil {
		if err := d.BeforeSend(ctx); err != nil {
			if stream != nil {
				d.abandon(ctx, stream)
			}
			err = fmt.Errorf("recording the reply before sending: %w", err)
			noteSend(ctx, err)
			return Delivery{}, err
		}
	}
	if live != nil {
		// The reply replaces "typing…"; an indicator renewed after it
		// would say the bot is still at it.
		live.replying(ctx)
	}
	var dl Delivery
	var err error
	switch r, ok := disp.(Reporter); {
	case stream != nil:
		// The reply is in the chat already, growing: it is finished in
		// place rather than sent again.
		if dl, err = stream.Finish(ctx, text); err != nil {
			d.abandon(ctx, stream)
		}
	case ok:
		dl, err = r.SendTextReport(ctx, req, text)
	default:
		err = disp.SendText(ctx, req, text)
	}
	if hook != nil && err == nil {
		// A path that sent without calling BeforeWire still leaves its
		// record, as every reply must.
		if herr := hook.run(ctx); herr != nil {
			zerolog.Ctx(ctx).Error().Err(herr).Str("chatKey", req.ChatKey).Msg("recording a reply after sending it")
		}
	}
	// The platform's own error is what the run reports at its end; the
	// model hears where it happened too.
	noteSend(ctx, err)
	if err != nil {
		if stream != nil {
			err = fmt.Errorf("finishing a streamed reply: %w", err)
		}
		return Delivery{}, fmt.Errorf("delivering to %s: %w", req.Channel, err)
	}
	if dl.Sent != "" {
		text = dl.Sent
	}
	noteReplied(ctx, text)
	if d.Store == nil {
		return dl, nil
	}
	meta := replyMeta(req, via)
	if len(dl.Notices) > 0 {
		meta["notices"] = dl.Notices
	}
	_, err = d.Store.Append(ctx, chat.ChatLogEntryV1{
		Channel: req.Channel,
		ChatID:  req.ChatID,
		ChatKey: req.ChatKey,
		Role:    chat.RoleAssistant,
		Text:    text,
		Meta:    meta,
	})
	if err != nil {
		// The user has the reply; losing the log line must not turn a
		// delivered reply into a reported failure (the model would resend).
		zerolog.Ctx(ctx).Error().Err(err).Str("chatKey", req.ChatKey).Msg("logging delivered reply")
	}
	return dl, nil
}

// replyMeta is the meta of an assistant entry: how it was sent (via), and
// which message, topic or thread it answers.
func replyMeta(req RequestContext, via string) map[string]any {
	meta := map[string]any{"via": via}
	if req.MessageID != "" {
		meta["replyTo"] = req.MessageID
	}
	if req.MessageThreadID != 0 {
		meta["messageThreadId"] = req.MessageThreadID
	}
	if req.ThreadID != "" {
		meta["threadId"] = req.ThreadID
	}
	return meta
}

// abandon takes a stream whose reply could not be finished out of the
// chat: the model hears the delivery failed, and a half reply must not
// stay as if it were the answer.
func (d *Deliverer) abandon(ctx context.Context, rs ReplyStream) {
	if err := rs.Abandon(ctx); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("removing a streamed reply that could not be finished")
	}
}

// EventUndelivered marks the system entry LogUndelivered writes (meta.event).
const EventUndelivered = "reply_undelivered"

// DeliveryFailed is meta.delivery of the entry LogUndelivered writes: the
// chat log's mark (and the console's) for a reply the user did not get.
const DeliveryFailed = "failed"

// LogUndelivered leaves a system entry in the chat of the request carried by
// ctx saying that a reply did not reach the user, and why: meta.delivery is
// "failed", meta.reason the platform's words, and meta.part / meta.parts
// say which part failed when the parts before it did arrive. The entry
// names the message in meta.replyTo, not in its messageId: the user's
// message stays part of the conversation.
func (d *Deliverer) LogUndelivered(ctx context.Context, u Undelivered) error {
	req, ok := RequestFromContext(ctx)
	if !ok || req.ChatKey == "" || d.Store == nil {
		return nil
	}
	meta := map[string]any{"event": EventUndelivered, "delivery": DeliveryFailed, "reason": u.Reason()}
	if u.Part > 0 {
		meta["part"], meta["parts"] = u.Part, u.Parts
	}
	if req.MessageID != "" {
		meta["replyTo"] = req.MessageID
	}
	if _, aerr := d.Store.Append(ctx, chat.ChatLogEntryV1{
		Channel: req.Channel, ChatID: req.ChatID, ChatKey: req.ChatKey,
		Role: chat.RoleSystem, Text: u.String(), Meta: meta,
	}); aerr != nil {
		return fmt.Errorf("logging an undelivered reply: %w", aerr)
	}
	return nil
}

// SendFinalOutputIfNeeded is the final-output fallback: when a run ended
// without a successful chat_send, the model's final text is delivered once so
// the user is not left without an answer. An empty output sends nothing (a
// placeholder like "done" would be noise to the user) and is only logged.
// It reports whether it sent anything.
func (d *Deliverer) SendFinalOutputIfNeeded(ctx context.Context, output string, delivered bool, log zerolog.Logger) (bool, error) {
	if delivered {
		return false, nil
	}
	req, ok := RequestFromContext(ctx)
	if !ok || req.Channel == "" {
		return false, nil
	}
	if strings.TrimSpace(output) == "" {
		log.Warn().Str("chatKey", req.ChatKey).Str("channel", req.Channel).
			Msg("run ended without chat_send and with empty output: nothing sent")
		return false, nil
	}
	if err := d.Deliver(ctx, output, ViaFallback); err != nil {
		return false, fmt.Errorf("sending final output: %w", err)
	}
	return true, nil
}
