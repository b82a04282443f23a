package fakeqq

import (
	"fmt"
	"time"
)

// Event types the builders make.
const (
	EventGroupAt  = "GROUP_AT_MESSAGE_CREATE"
	EventC2C      = "C2C_MESSAGE_CREATE"
	EventAt       = "AT_MESSAGE_CREATE"
	EventDirect   = "DIRECT_MESSAGE_CREATE"
	shanghaiZone  = 8 * 60 * 60
	timestampForm = "2006-01-02T15:04:05-07:00"
)

// Event is one dispatch: op 0 with t = Type, id = ID and d = Data. The same
// value goes over the websocket (Push) or to a webhook (DeliverWebhook).
// Data is marshalled when the event is sent; do not change it after that.
type Event struct {
	ID        string         // the event id ("GROUP_AT_MESSAGE_CREATE:…")
	Type      string         // t
	MessageID string         // d.id: the msg_id a passive reply names
	Data      map[string]any // d
}

// GroupAt builds a group message that @-mentions the bot. As QQ sends it,
// the content has the mention removed and starts with a space.
func (s *Server) GroupAt(groupOpenID, memberOpenID, content string) Event {
	return s.build(EventGroupAt, map[string]any{
		"content":      " " + content,
		"group_id":     groupOpenID,
		"group_openid": groupOpenID,
		"author":       map[string]any{"id": memberOpenID, "member_openid": memberOpenID},
	})
}

// C2C builds a message from a user in a one-to-one chat with the bot.
func (s *Server) C2C(userOpenID, content string) Event {
	return s.build(EventC2C, map[string]any{
		"content": content,
		"author":  map[string]any{"id": userOpenID, "user_openid": userOpenID},
	})
}

// ChannelAt builds a guild channel message that @-mentions the bot: the
// content starts with "<@!botid> " and mentions lists the bot, as QQ sends it.
func (s *Server) ChannelAt(guildID, channelID, userID, content string) Event {
	return s.build(EventAt, map[string]any{
		"content":    "<@!" + s.opts.BotID + "> " + content,
		"guild_id":   guildID,
		"channel_id": channelID,
		"author":     map[string]any{"id": userID, "username": "user-" + userID, "bot": false},
		"member":     map[string]any{"nick": "user-" + userID, "roles": []string{"1"}},
		"mentions":   []any{map[string]any{"id": s.opts.BotID, "username": s.opts.BotUsername, "bot": true}},
	})
}

// Direct builds a guild direct message. guildID is the DM session's own
// guild id (the one replies are posted to), not the guild it started from.
func (s *Server) Direct(guildID, channelID, userID, content string) Event {
	return s.build(EventDirect, map[string]any{
		"content":        content,
		"guild_id":       guildID,
		"channel_id":     channelID,
		"src_guild_id":   "src-" + guildID,
		"direct_message": true,
		"author":         map[string]any{"id": userID, "username": "user-" + userID, "bot": false},
	})
}

// build gives the event and its message fresh ids and remembers the message
// id, so replies to it are accepted.
func (s *Server) build(typ string, d map[string]any) Event {
	s.mu.Lock()
	n := s.nextIDLocked()
	mid := fmt.Sprintf("ROBOT1.0_msg%06d", n)
	now := s.nowLocked().Truncate(time.Second)
	s.known[mid] = knownMsg{kind: kindOf[typ], at: now}
	s.mu.Unlock()
	d["id"] = mid
	// QQ's timestamps have whole seconds; the windows count from them.
	d["timestamp"] = now.In(time.FixedZone("CST", shanghaiZone)).Format(timestampForm)
	return Event{ID: fmt.Sprintf("%s:ev%06d", typ, n), Type: typ, MessageID: mid, Data: d}
}

// kindOf maps an event type to the kind of chat its replies go to.
var kindOf = map[string]string{EventGroupAt: "group", EventC2C: "c2c", EventAt: "channel", EventDirect: "dm"}

// PushGroupAt builds a GroupAt event and pushes it.
func (s *Server) PushGroupAt(groupOpenID, memberOpenID, content string) Event {
	return s.Push(s.GroupAt(groupOpenID, memberOpenID, content))
}

// PushC2C builds a C2C event and pushes it.
func (s *Server) PushC2C(userOpenID, content string) Event {
	return s.Push(s.C2C(userOpenID, content))
}

// PushChannelAt builds a ChannelAt event and pushes it.
func (s *Server) PushChannelAt(guildID, channelID, userID, content string) Event {
	return s.Push(s.ChannelAt(guildID, channelID, userID, content))
}

// PushDirect builds a Direct event and pushes it.
func (s *Server) PushDirect(guildID, channelID, userID, content string) Event {
	return s.Push(s.Direct(guildID, channelID, userID, content))
}

// Push dispatches ev on the live gateway connection with the session's next
// seq. Pushed while no connection is live (before READY, after a drop), it
// waits and goes out once one is. It returns ev.
func (s *Server) Push(ev Event) Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events[ev.ID] = ev
	s.dispatchLocked(ev)
	return ev
}

// Redeliver sends the event with id eventID again, as QQ does after a
// resume or when it is unsure the first delivery arrived.
func (s *Server) Redeliver(eventID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev, ok := s.events[eventID]
	if !ok {
		return fmt.Errorf("fakeqq: no event %q was pushed", eventID)
	}
	s.dispatchLocked(ev)
	return nil
}
