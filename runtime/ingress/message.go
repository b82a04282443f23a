// Package ingress is the path every incoming message takes before a run:
// normalized by its platform into an IncomingChatMessage, cut to a sane
// length, checked against re-delivery and the per-user rate limit, logged in
// the ChatStore, journaled, and queued as a Job on the one global queue.
package ingress

// IncomingChatMessage is a platform message normalized by an adapter. Text
// is what the model sees verbatim: in groups the bot's mention is already
// stripped.
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
