package feishu

import (
	"context"
	"errors"
	"strings"

	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/ingress"
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
	if !a.allowC.Allows(chatID) || !a.allowU.Allows(sender) {
		a.log.Debug().Str("chatId", chatID).Str("userId", sender).Msg("message outside the allowlists ignored")
		return nil
	}
	chatType := deref(m.ChatType)
	group := chatType != "p2p"
	threadID := deref(m.ThreadId)
	key := chatKey(chatID, threadID)
	ms := newMentions(m.Mentions, botID)
	msgType := deref(m.MessageType)
	text := messageText(msgType, deref(m.Content), ms)

	in := ingress.IncomingChatMessage{
		ChatID: chatID, ChatType: chatType, MessageID: msgID, ThreadID: threadID, UserID: sender,
	}
	addressed := !group || ms.bot
	cmd, _ := command(text)
	// Files are described here and downloaded (voice transcribed) only once
	// the message is known to be new and answered (Prepare). For a file
	// message the description replaces the one-line summary; a post keeps
	// its text.
	atts := a.attachments(msgID, msgType, deref(m.Content))
	if len(atts) > 0 && msgType != "post" {
		text = ""
	}
	in.Text = adapters.Describe(atts, text)
	if strings.TrimSpace(in.Text) == "" {
		in.Text = "(empty message)"
	}
	meta := map[string]any{"messageType": msgType}
	if eventID != "" {
		meta["eventId"] = eventID
	}
	if root := deref(m.RootId); root != "" {
		meta["rootId"] = root
	}
	return a.intake.Take(ctx, adapters.Arrival{
		Submission: ingress.Submission{Channel: chat.ChannelFeishu, ChatKey: key, Message: in, Meta: meta,
			Prepare: func(ctx context.Context, described string) ingress.Prepared {
				if len(atts) == 0 {
					return ingress.Prepared{Text: described}
				}
				return a.opts.Media.Prepare(ctx, key, msgID, text, atts)
			},
		},
		Addressed: addressed,
		Command:   cmd,
	})
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
