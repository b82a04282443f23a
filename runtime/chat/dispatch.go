package chat

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/rs/zerolog"
)

// Dispatcher delivers user-visible text to one platform. Adapters register
// one per channel; SendText must report a failed delivery as an error, since
// the model is told the truth about whether its reply arrived.
type Dispatcher interface {
	SendText(ctx context.Context, req RequestContext, text string) error
}

// DispatcherFunc adapts a function to the Dispatcher interface.
type DispatcherFunc func(ctx context.Context, req RequestContext, text string) error

// SendText calls f.
func (f DispatcherFunc) SendText(ctx context.Context, req RequestContext, text string) error {
	return f(ctx, req, text)
}

// Errors returned by Deliver.
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

type registryKey struct{}

// WithRegistry returns a context that carries reg.
func WithRegistry(ctx context.Context, reg *Registry) context.Context {
	return context.WithValue(ctx, registryKey{}, reg)
}

// RegistryFromContext returns the registry carried by ctx, if any.
func RegistryFromContext(ctx context.Context) (*Registry, bool) {
	reg, ok := ctx.Value(registryKey{}).(*Registry)
	return reg, ok && reg != nil
}

// Deliver sends text to the chat of the request carried by ctx through the
// registry carried by ctx, then logs it as an assistant entry in store (when
// store is not nil). The entry is written only after the platform accepted
// the text, so the log never claims a reply the user did not get.
func Deliver(ctx context.Context, store *Store, text, via string) error {
	req, ok := RequestFromContext(ctx)
	if !ok || req.Channel == "" {
		return ErrNoRequest
	}
	reg, ok := RegistryFromContext(ctx)
	if !ok {
		return fmt.Errorf("delivering to %s: %w", req.Channel, ErrNoDispatcher)
	}
	d, ok := reg.Lookup(req.Channel)
	if !ok {
		return fmt.Errorf("delivering to %s: %w", req.Channel, ErrNoDispatcher)
	}
	if hook, ok := ctx.Value(beforeSendKey{}).(func() error); ok {
		if err := hook(); err != nil {
			return fmt.Errorf("recording the reply before sending: %w", err)
		}
	}
	if err := d.SendText(ctx, req, text); err != nil {
		return fmt.Errorf("delivering to %s: %w", req.Channel, err)
	}
	if store == nil {
		return nil
	}
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
	_, err := store.Append(ctx, ChatLogEntryV1{
		Channel: req.Channel,
		ChatID:  req.ChatID,
		ChatKey: req.ChatKey,
		Role:    RoleAssistant,
		Text:    text,
		Meta:    meta,
	})
	if err != nil {
		// The user has the reply; losing the log line must not turn a
		// delivered reply into a reported failure (the model would resend).
		zerolog.Ctx(ctx).Error().Err(err).Str("chatKey", req.ChatKey).Msg("logging delivered reply")
	}
	return nil
}

type beforeSendKey struct{}

// WithBeforeSend returns a context whose Deliver calls hook before handing
// text to the platform, and sends nothing when it fails. The runner records
// the intent to reply durably here, so that after a crash a message whose
// reply may have gone out is never run (and answered) again.
func WithBeforeSend(ctx context.Context, hook func() error) context.Context {
	return context.WithValue(ctx, beforeSendKey{}, hook)
}

// Ways a reply was delivered, recorded in the assistant entry's meta.via.
const (
	ViaChatSend = "chat_send"
	ViaFallback = "fallback"
)

// SendFinalOutputIfNeeded is the final-output fallback: when a run ended
// without a successful chat_send, the model's final text is delivered once so
// the user is not left without an answer. An empty output sends nothing (a
// placeholder like "done" would be noise to the user) and is only logged.
// It reports whether it sent anything.
func SendFinalOutputIfNeeded(ctx context.Context, store *Store, output string, delivered bool, log zerolog.Logger) (bool, error) {
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
	if err := Deliver(ctx, store, output, ViaFallback); err != nil {
		return false, fmt.Errorf("sending final output: %w", err)
	}
	return true, nil
}
