package feishu

import (
	"context"
	"errors"
	"strings"

	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/runtime/chat"
)

var (
	// errNotReady is returned for events that arrive before the bot's
	// open_id is known; the platform delivers them again.
	errNotReady = errors.New("feishu adapter not ready")
	// errInFlight is returned for a re-push that arrives while the first
	// delivery is still being recorded; the platform delivers it again.
	errInFlight = errors.New("feishu event is being handled")
)

// onMessage is the SDK's handler for im.message.receive_v1, from the
// websocket or the webhook. It records the message and queues it, then
// returns at once: the platform re-pushes an event whose ack takes over 3 s,
// so nothing slow (the model, sends) happens here. An error makes the SDK
// answer 500 and Feishu deliver the event again: it is returned only when a
// later delivery can succeed.
func (a *Adapter) onMessage(ctx context.Context, ev *larkim.P2MessageReceiveV1) error {
	botID, ok := a.identity()
	if !ok {
		return errNotReady
	}
	if ev == nil || ev.Event == nil || ev.Event.Message == nil {
		return nil
	}
	var eventID string
	if ev.EventV2Base != nil && ev.EventV2Base.Header != nil {
		eventID = ev.EventV2Base.Header.EventID
	}
	if eventID != "" {
		dup, busy := a.seen.claim(eventID)
		if dup {
			a.log.Debug().Str("eventId", eventID).Msg("re-pushed feishu event ignored")
			return nil
		}
		if busy {
			return errInFlight
		}
	}
	err := a.handle(ctx, ev.Event, botID, eventID)
	if eventID == "" {
		return err
	}
	if err != nil {
		a.seen.release(eventID)
		return err
	}
	if err := a.seen.done(eventID); err != nil {
		a.log.Warn().Err(err).Str("eventId", eventID).Msg("remembering a feishu event")
	}
	return nil
}

// handle logs the message, and queues it when it is addressed to the bot.
func (a *Adapter) handle(ctx context.Context, ev *larkim.P2MessageReceiveV1Data, botID, eventID string) error {
	m := ev.Message
	chatID, msgID := deref(m.ChatId), deref(m.MessageId)
	if chatID == "" || msgID == "" {
		return nil
	}
	var sender, senderType string
	if s := ev.Sender; s != nil {
		senderType = deref(s.SenderType)
		if s.SenderId != nil {
			sender = deref(s.SenderId.OpenId)
		}
	}
	// The bot's own messages and other apps never trigger a run: two bots in
	// one group would otherwise talk to each other forever.
	if sender == botID || (senderType != "" && senderType != "user") {
		return nil
	}
	chatType := deref(m.ChatType)
	group := chatType != "p2p"
	threadID := deref(m.ThreadId)
	key := chatKey(chatID, threadID)
	ms := newMentions(m.Mentions, botID)
	msgType := deref(m.MessageType)
	text := messageText(msgType, deref(m.Content), ms)

	in := adapters.IncomingChatMessage{
		ChatID: chatID, ChatType: chatType, MessageID: msgID, ThreadID: threadID, UserID: sender,
	}
	req := chat.RequestContext{
		Channel: chat.ChannelFeishu, ChatID: chatID, ThreadID: threadID, ChatKey: key,
		UserID: sender, ChatType: chatType, MessageID: msgID,
	}
	addressed := !group || ms.bot
	if addressed {
		if name, ok := command(text); ok {
			if reply, ok := a.opts.Commands.Reply(ctx, name, req); ok {
				a.noteLater(req, reply)
				return nil
			}
		}
	}
	if strings.TrimSpace(text) == "" {
		text = "(empty message)"
	}
	in.Text = text
	meta := map[string]any{"messageType": msgType}
	if eventID != "" {
		meta["eventId"] = eventID
	}
	if root := deref(m.RootId); root != "" {
		meta["rootId"] = root
	}

	if !addressed {
		// Logged, so chat_load_history sees the whole conversation.
		err := a.opts.Engine.Ingress.RecordOnce(ctx, chat.ChannelFeishu, key, in, meta)
		if errors.Is(err, adapters.ErrDuplicate) {
			return nil
		}
		return err
	}
	t, err := a.opts.Engine.Ingress.AcceptOnce(ctx, adapters.Submission{
		Channel: chat.ChannelFeishu, ChatKey: key, Message: in, Meta: meta,
	})
	switch {
	case errors.Is(err, adapters.ErrDuplicate):
		a.log.Debug().Str("chatKey", key).Str("messageId", msgID).Msg("re-delivered feishu message ignored")
		return nil
	case adapters.IsBusy(err):
		// The message is logged; tell the user rather than stay silent.
		a.noteLater(req, "I'm overloaded right now and can't take your message. Please try again in a minute.")
		return nil
	case err != nil:
		return err
	}
	if t.Position > 0 && a.opts.BusyNote {
		a.noteIfStillWaiting(t.ID, req)
	}
	return nil
}

// command reads "/name …" (a command may carry "@bot" after its name, as
// in other platforms' habits).
func command(text string) (string, bool) {
	first, _, _ := strings.Cut(strings.TrimSpace(text), " ")
	name, ok := strings.CutPrefix(first, "/")
	if !ok || name == "" {
		return "", false
	}
	name, _, _ = strings.Cut(name, "@")
	return name, true
}

// noteLater sends a note of the adapter's own (command answers, busy
// replies) in the background: the event handler must not wait for a send.
func (a *Adapter) noteLater(req chat.RequestContext, text string) {
	a.bg.goAfter(0, func(ctx context.Context) { a.sendNote(ctx, req, text) })
}

// noteIfStillWaiting tells the chat its place in line if the message has
// not started after BusyAfter: a short wait needs no note.
func (a *Adapter) noteIfStillWaiting(id string, req chat.RequestContext) {
	a.bg.goAfter(a.opts.BusyAfter, func(ctx context.Context) {
		pos, ok := a.opts.Engine.Queue.Position(id)
		if !ok || pos == 0 || !a.busy.Allow(req.ChatKey) {
			return
		}
		a.sendNote(ctx, req, adapters.BusyText(pos))
	})
}

// sendNote sends through the same path as replies; failures are only logged.
func (a *Adapter) sendNote(ctx context.Context, req chat.RequestContext, text string) {
	if err := a.send(ctx, req, text, kindNote); err != nil {
		a.log.Warn().Err(err).Str("chatKey", req.ChatKey).Msg("sending feishu note failed")
	}
}
