package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/runtime/chat"
)

// errNotReady is returned for updates that arrive before getMe answered.
var errNotReady = errors.New("telegram adapter not ready")

// handleUpdate takes one update from polling or the webhook: it is logged,
// and queued when it is addressed to the bot. It returns an error only when
// the update could not be recorded, so the caller must not acknowledge it.
func (a *Adapter) handleUpdate(ctx context.Context, raw json.RawMessage) error {
	bot, ok := a.identity()
	if !ok {
		return errNotReady
	}
	u, err := decodeUpdate(raw)
	if err != nil {
		a.log.Warn().Err(err).Msg("skipping an update that does not decode")
		return nil // re-delivering it would not help
	}
	m := u.Msg
	// Edited messages, channel posts and other update kinds are not answered.
	if m == nil || m.Chat == nil || m.From == nil {
		return nil
	}
	// The bot's own messages and other bots never trigger a run: two bots
	// in one group would otherwise talk to each other forever.
	if m.From.ID == bot.ID || m.From.IsBot || isService(m) {
		return nil
	}
	if (a.allowC != nil && !a.allowC[m.Chat.ID]) || (a.allowU != nil && !a.allowU[m.From.ID]) {
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
	in := adapters.IncomingChatMessage{
		ChatID:          strconv.FormatInt(m.Chat.ID, 10),
		ChatType:        m.Chat.Type,
		MessageID:       strconv.Itoa(m.MessageID),
		MessageThreadID: u.ThreadID,
		UserID:          strconv.FormatInt(m.From.ID, 10),
		Username:        displayName(m.From),
	}
	req := chat.RequestContext{
		Channel: chat.ChannelTelegram, ChatID: in.ChatID, MessageThreadID: in.MessageThreadID,
		ChatKey: key, UserID: in.UserID, ChatType: in.ChatType, Username: in.Username, MessageID: in.MessageID,
	}

	addressed := !group || !a.opts.RequireMention || addr.mentioned || addr.replyToMe || addr.command != ""
	text := m.Text
	if text == "" {
		text = m.Caption
	}
	if group {
		text = bot.stripMention(text)
	}
	if addr.command != "" {
		text = stripCommandTarget(text, bot.Username)
		if reply, ok := a.opts.Commands.Reply(ctx, addr.command, req); ok {
			a.sendNote(ctx, req, reply)
			return nil
		}
	}
	in.Text = a.describeMedia(ctx, m, text)
	if strings.TrimSpace(in.Text) == "" {
		in.Text = "(empty message)"
	}
	meta := map[string]any{"updateId": u.ID}

	if !addressed {
		// Logged, so chat_load_history sees the whole conversation.
		err := a.opts.Engine.Ingress.RecordOnce(ctx, chat.ChannelTelegram, key, in, meta)
		if errors.Is(err, adapters.ErrDuplicate) {
			return nil
		}
		return err
	}
	t, err := a.opts.Engine.Ingress.AcceptOnce(ctx, adapters.Submission{
		Channel: chat.ChannelTelegram, ChatKey: key, Message: in, Meta: meta,
	})
	switch {
	case errors.Is(err, adapters.ErrDuplicate):
		a.log.Debug().Str("chatKey", key).Str("messageId", in.MessageID).Msg("re-delivered message ignored")
		return nil
	case adapters.IsBusy(err):
		// The message is logged; tell the user rather than stay silent.
		a.sendNote(ctx, req, "I'm overloaded right now and can't take your message. Please try again in a minute.")
		return nil
	case err != nil:
		return err
	}
	if t.Position > 0 && a.opts.BusyNote {
		a.noteIfStillWaiting(t.ID, req)
	}
	return nil
}

// noteIfStillWaiting tells the chat its place in line if the message has
// not started after BusyAfter: a short wait needs no note.
func (a *Adapter) noteIfStillWaiting(id string, req chat.RequestContext) {
	a.notesMu.Lock()
	defer a.notesMu.Unlock()
	if a.stopped {
		return
	}
	if a.notes == nil {
		a.notes = map[*time.Timer]struct{}{}
	}
	var t *time.Timer
	t = time.AfterFunc(a.opts.BusyAfter, func() {
		a.notesMu.Lock()
		_, live := a.notes[t]
		delete(a.notes, t)
		a.notesMu.Unlock()
		if !live {
			return
		}
		pos, ok := a.opts.Engine.Queue.Position(id)
		if !ok || pos == 0 || !a.busy.Allow(req.ChatKey) {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		a.sendNote(ctx, req, adapters.BusyText(pos))
	})
	a.notes[t] = struct{}{}
}

// sendNote sends a short message of the adapter's own (command answers,
// busy notes) through the same paced sender; failures are only logged.
func (a *Adapter) sendNote(ctx context.Context, req chat.RequestContext, text string) {
	if err := a.sendText(ctx, req, text); err != nil {
		a.log.Warn().Err(err).Str("chatKey", req.ChatKey).Msg("sending note failed")
	}
}

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
func replyTarget(req chat.RequestContext) (chatID, threadID, replyTo int64, err error) {
	chatID, err = strconv.ParseInt(req.ChatID, 10, 64)
	if err != nil {
		return 0, 0, 0, errors.New("telegram: chat id is not a number")
	}
	if req.ChatType == "group" || req.ChatType == "supergroup" {
		replyTo, _ = strconv.ParseInt(req.MessageID, 10, 64)
	}
	return chatID, req.MessageThreadID, replyTo, nil
}
