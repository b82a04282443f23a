package adapters

// IncomingChatMessage is a platform message normalized by an adapter
// (seeds/002 §2.1). Text is what the model sees verbatim: in groups the
// bot's mention is already stripped.
type IncomingChatMessage struct {
	ChatID          string `json:"chatId"`
	Text            string `json:"text"`
	ChatType        string `json:"chatType,omitempty"`
	MessageID       string `json:"messageId,omitempty"`
	MessageThreadID int64  `json:"messageThreadId,omitempty"`
	// ThreadID is a string thread id (Feishu threads).
	ThreadID string `json:"threadId,omitempty"`
	UserID   string `json:"userId,omitempty"`
	Username string `json:"username,omitempty"`
}
