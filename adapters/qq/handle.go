package qq

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/tencent-connect/botgo/dto"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/ingress"
)

// Kinds of QQ chats; each is RequestContext.ChatType and picks the reply
// route.
const (
	kindGroup   = "group"   // GROUP_AT_MESSAGE_CREATE → /v2/groups/{group_openid}/messages
	kindC2C     = "c2c"     // C2C_MESSAGE_CREATE → /v2/users/{user_openid}/messages
	kindChannel = "channel" // AT_MESSAGE_CREATE → /channels/{channel_id}/messages
	kindDM      = "dm"      // DIRECT_MESSAGE_CREATE → /dms/{guild_id}/messages
)

// errNotRunning is returned for events that arrive while Run is not running.
var errNotRunning = errors.New("qq adapter not running")

// onMessage takes one message event from the gateway or the webhook. It
// returns an error only when the message could not be recorded, so that a
// webhook call is answered as failed and QQ delivers it again.
func (a *Adapter) onMessage(p *dto.WSPayload, kind string, m *dto.Message) error {
	a.noteSeq(p)
	ctx, ok := a.running()
	if !ok {
		return errNotRunning
	}
	if m == nil || m.ID == "" {
		return nil
	}
	// The event id catches a re-delivery at once, commands included; the
	// message id (the front door's dedupe, through the ChatStore) also across restarts.
	if p.EventID != "" {
		if known, _ := a.events.ContainsOrAdd(p.EventID, struct{}{}); known {
			a.log.Debug().Str("eventId", p.EventID).Msg("re-delivered qq event ignored")
			return nil
		}
	}
	err := a.handleMessage(ctx, p, kind, m)
	if errors.Is(err, ingress.ErrInFlight) {
		// Another replica (the gateway's last holder) claimed it and has
		// not settled it: QQ will not deliver a gateway event again, so
		// ask again here until the claim is settled or taken over.
		a.retryInFlight(p, kind, m, 1)
		return nil
	}
	if err != nil && p.EventID != "" {
		a.events.Remove(p.EventID)
	}
	return err
}

// inFlightRetry paces the retries of a message another replica is taking;
// inFlightTries of them outlast a dead replica's claim (its heartbeat
// expires within 8 s, an abandoned claim within 35 s).
const (
	inFlightRetry = 2 * time.Second
	inFlightTries = 20
)

// retryInFlight takes the message again after inFlightRetry, in the
// background, while another replica's claim is unsettled.
func (a *Adapter) retryInFlight(p *dto.WSPayload, kind string, m *dto.Message, try int) {
	a.log.Debug().Str("msgId", m.ID).Int("try", try).Msg("a qq message is being taken by another replica; asking again shortly")
	a.workers.GoAfter(inFlightRetry, func(context.Context) {
		ctx, ok := a.running()
		if !ok {
			return
		}
		err := a.handleMessage(ctx, p, kind, m)
		switch {
		case errors.Is(err, ingress.ErrInFlight) && try < inFlightTries:
			a.retryInFlight(p, kind, m, try+1)
		case err != nil:
			a.log.Error().Err(err).Str("msgId", m.ID).Msg("a qq message another replica was taking could not be taken here")
		}
	})
}

func (a *Adapter) handleMessage(ctx context.Context, p *dto.WSPayload, kind string, m *dto.Message) error {
	// Bots (this one included) never trigger a run: two bots in one
	// channel would otherwise talk to each other forever.
	if m.Author != nil && m.Author.Bot {
		return nil
	}
	in, key := normalize(kind, m)
	if key == "" {
		a.log.Warn().Str("eventType", string(p.Type)).Str("messageId", m.ID).Msg("qq message without a chat id ignored")
		return nil
	}
	if !a.allowC.Allows(in.ChatID) || !a.allowU.Allows(in.UserID) {
		a.log.Debug().Str("chatId", in.ChatID).Str("userId", in.UserID).Msg("message outside the allowlists ignored")
		return nil
	}
	text := a.stripMention(m.Content, m.Mentions)
	cmd, _ := command(text)
	// Attachments are described here and downloaded (voice transcribed)
	// only once the message is known to be new (Prepare).
	atts := attachments(attachmentsOf(p.RawMessage, m), mediaScheme(a.opts.APIBase))
	in.Text = adapters.Describe(atts, text)
	if in.Text == "" {
		in.Text = "(empty message)"
	}
	// QQ's windows for passive replies count from when the user sent the
	// message: remember that for the send path.
	a.replies.arrived(m.ID, m.Timestamp)
	meta := map[string]any{"eventId": p.EventID, "eventType": string(p.Type)}
	if m.GuildID != "" {
		meta["guildId"] = m.GuildID
	}
	// QQ delivers only messages meant for the bot (@ in groups and
	// channels, private messages).
	return a.intake.Take(ctx, adapters.Arrival{
		Submission: ingress.Submission{Channel: chat.ChannelQQ, ChatKey: key, Message: in, Meta: meta,
			Prepare: func(ctx context.Context, described string) ingress.Prepared {
				if len(atts) == 0 {
					return ingress.Prepared{Text: described}
				}
				return a.opts.Media.Prepare(ctx, key, m.ID, text, atts)
			},
		},
		Addressed: true,
		Command:   cmd,
	})
}

// normalize maps an event to the message the core sees and its chatKey
// (qq:<kind>:<id>). Guild DMs are keyed by the DM session's guild id, which is
// also where replies go: qq:dm:<guild_id>.
func normalize(kind string, m *dto.Message) (ingress.IncomingChatMessage, string) {
	in := ingress.IncomingChatMessage{ChatType: kind, MessageID: m.ID}
	if m.Author != nil {
		in.UserID, in.Username = m.Author.ID, m.Author.Username
	}
	switch kind {
	case kindGroup:
		in.ChatID = m.GroupID
	case kindC2C:
		in.ChatID = in.UserID
	case kindChannel:
		in.ChatID = m.ChannelID
	case kindDM:
		in.ChatID = m.GuildID
	}
	if in.ChatID == "" {
		return in, ""
	}
	return in, "qq:" + kind + ":" + in.ChatID
}

// stripMention removes the bot's own mention (<@!id> or <@id>) from
// content. The id comes from READY; in webhook mode there is none, and the
// bot is whichever bot the message mentions.
func (a *Adapter) stripMention(content string, mentions []*dto.User) string {
	a.mu.Lock()
	ids := []string{a.botID}
	a.mu.Unlock()
	if ids[0] == "" {
		ids = ids[:0]
		for _, u := range mentions {
			if u != nil && u.Bot && u.ID != "" {
				ids = append(ids, u.ID)
			}
		}
	}
	for _, id := range ids {
		if id == "" {
			continue
		}
		content = strings.ReplaceAll(content, "<@!"+id+">", "")
		content = strings.ReplaceAll(content, "<@"+id+">", "")
	}
	return strings.TrimSpace(content)
}

// command returns the command of "/name args" ("/help" → "help").
func command(text string) (string, bool) {
	if !strings.HasPrefix(text, "/") {
		return "", false
	}
	name, _, _ := strings.Cut(strings.Fields(text)[0][1:], "@")
	return name, name != ""
}
