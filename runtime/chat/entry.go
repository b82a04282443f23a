// Package chat is the ChatStore: every chat's append-only JSONL log of
// ChatLogEntryV1 lines under .ship/chats, with reads of recent entries and
// keyword search over archived segments.
package chat

import "errors"

// Roles of a ChatLogEntryV1.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleSystem    = "system"
	RoleTool      = "tool"
	// RoleSummary is the model's summary of the oldest turns of a chat,
	// which stands in for them in the prompt (meta.keptTurns: how many
	// turns before the entry stay history).
	RoleSummary = "summary"
)

// Channels a message can come from.
const (
	ChannelTelegram  = "telegram"
	ChannelFeishu    = "feishu"
	ChannelQQ        = "qq"
	ChannelAPI       = "api"
	ChannelCLI       = "cli"
	ChannelScheduler = "scheduler"
)

// IsGroup reports whether a chat type, as the platforms name it (Telegram
// group/supergroup/channel, Feishu group, QQ group/channel), has more than
// one person in it.
func IsGroup(chatType string) bool {
	switch chatType {
	case "group", "supergroup", "channel":
		return true
	}
	return false
}

// EventClear is meta.event of the system entry /clear leaves in a chat's log:
// history rebuilt after a restart starts after the last one.
const EventClear = "clear"

// ChatLogEntryV1 is one line of a chat's JSONL log. The JSON
// names are a contract with every reader of .ship/chats: do not rename them.
type ChatLogEntryV1 struct {
	V         int            `json:"v"`
	TS        int64          `json:"ts"` // milliseconds since the Unix epoch
	Channel   string         `json:"channel"`
	ChatID    string         `json:"chatId"`
	ChatKey   string         `json:"chatKey"`
	UserID    string         `json:"userId,omitempty"`
	MessageID string         `json:"messageId,omitempty"`
	Role      string         `json:"role"`
	Text      string         `json:"text"`
	Meta      map[string]any `json:"meta,omitempty"`
}

// ErrInvalidChatKey is returned for a chatKey that cannot name a chat file:
// empty, not valid UTF-8, or too long once escaped.
var ErrInvalidChatKey = errors.New("invalid chatKey")
