package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/ingress"
)

// errNotReady is returned for updates that arrive before getMe answered.
var errNotReady = errors.New("telegram adapter not ready")

// handleUpdate takes one update from polling or the webhook: a message is
// logged, and queued when it is addressed to the bot; a button press is
// answered (handleCallback). It returns an error only when
// the update could not be recorded, so the caller must not acknowledge it.
func (a *Adapter) handleUpdate(ctx context.Context, raw json.RawMessage) error {
	bot, ok := a.identity()
	if !ok {
		return errNotReady
	}
	u, err := decodeUpdate(raw)
	if err != nil {
		ev := a.log.Warn().Err(err)
		if id, ok := updateID(raw); ok {
			ev = ev.Int64("updateId", id)
		}
		ev.Msg("skipping a telegram update that does not decode")
		return nil // re-delivering it would not help
	}
	if u.Callback != nil {
		a.handleCallback(ctx, u, bot)
		return nil
	}
	m := u.Msg
	// Edited messages (not asked for, see allowedUpdates, but one created
	// before that may still come), channel posts and other update kinds are
	// not answered.
	if m == nil || m.Chat == nil || m.From == nil {
		a.log.Debug().Int("updateId", u.ID).Msg("telegram update of a kind ship does not answer ignored")
		return nil
	}
	// The bot's own messages and other bots never trigger a run: two bots
	// in one group would otherwise talk to each other forever.
	if m.From.ID == bot.ID || m.From.IsBot || isService(m) {
		return nil
	}
	if !a.allowC.Allows(m.Chat.ID) || !a.allowU.Allows(m.From.ID) {
		a.log.Debug().Int64("chatId", m.Chat.ID).Int64("userId", m.From.ID).Msg("message outside the allowlists ignored")
		return nil
	}
	if m.Chat.Type == "channel" {
		return nil
	}

	group := m.Chat.Type == "group" || m.Chat.Type == "supergroup"
	addr := address(u, bot)
	if addr.otherBot {
		return nil // "/cmd@other_bot" is none of ours, not even to log
	}
	key := chatKey(m.Chat.ID, u.ThreadID, u.IsTopic)
	in := ingress.IncomingChatMessage{
		ChatID:          strconv.FormatInt(m.Chat.ID, 10),
		ChatType:        m.Chat.Type,
		MessageID:       strconv.Itoa(m.MessageID),
		MessageThreadID: u.ThreadID,
		UserID:          strconv.FormatInt(m.From.ID, 10),
		Username:        displayName(m.From),
	}
	text := m.Text
	if text == "" {
		text = m.Caption
	}
	if group {
		text = bot.stripMention(text)
	}
	if addr.command != "" {
		text = stripCommandTarget(text, bot.Username)
	}
	// Media is described here and downloaded (and voice transcribed) only
	// once the message is known to be new and answered (Prepare).
	atts := a.attachments(m)
	in.Text = adapters.Describe(atts, text)
	if strings.TrimSpace(in.Text) == "" {
		in.Text = "(empty message)"
	}
	return a.intake.Take(ctx, adapters.Arrival{
		Submission: ingress.Submission{
			Channel: chat.ChannelTelegram, ChatKey: key, Message: in,
			Meta: map[string]any{"updateId": u.ID},
			Prepare: func(ctx context.Context, described string) ingress.Prepared {
				if len(atts) == 0 {
					return ingress.Prepared{Text: described}
				}
				return a.opts.Media.Prepare(ctx, key, in.MessageID, text, atts)
			},
		},
		Addressed: !group || !a.requireMention.Load() || addr.mentioned || addr.replyToMe || addr.command != "",
		Command:   addr.command,
	})
}

// In a group a reply to one of the bot's messages addresses the bot as a
// mention does (addr.replyToMe above), so /help offers both ways.
var _ adapters.ReplyAddressed = (*Adapter)(nil)

// RepliesAddressBot marks the adapter as adapters.ReplyAddressed.
func (a *Adapter) RepliesAddressBot() {}

// stripCommandTarget turns "/ask@ship_bot question" into "/ask question".
func stripCommandTarget(text, username string) string {
	first, rest, _ := strings.Cut(text, " ")
	if name, target, ok := strings.Cut(first, "@"); ok && strings.EqualFold(target, username) {
		first = name
	}
	if rest == "" {
		return first
	}
	return first + " " + rest
}

// replyTarget is where a reply to req goes: the same chat and topic, as a
// reply to the triggering message in groups.
func replyTarget(req dispatch.RequestContext) (chatID, threadID, replyTo int64, err error) {
	chatID, err = strconv.ParseInt(req.ChatID, 10, 64)
	if err != nil {
		return 0, 0, 0, errors.New("telegram: chat id is not a number")
	}
	if req.ChatType == "group" || req.ChatType == "supergroup" {
		replyTo, _ = strconv.ParseInt(req.MessageID, 10, 64)
	}
	return chatID, req.MessageThreadID, replyTo, nil
}
