package chat

import "context"

// Log is the ChatStore as the rest of ship uses it: the append-only record
// of every chat. Store (JSONL files under .ship/chats) is the default; in
// cluster mode a JetStream stream shared by the replicas stands behind the
// same methods and entry shape, so tools, ingress and the API cannot tell
// them apart.
type Log interface {
	// Append records e durably and returns it as written (V set, a zero
	// TS stamped). Invalid entries (ErrInvalidChatKey, ErrInvalidEntry)
	// record nothing.
	Append(ctx context.Context, e ChatLogEntryV1) (ChatLogEntryV1, error)
	// AppendDeferred records e but may return before it is durable; the
	// caller calls Wait (or Release) on the Pending once.
	AppendDeferred(ctx context.Context, e ChatLogEntryV1) (ChatLogEntryV1, *Pending, error)
	// Recent returns up to n of the chat's latest entries, oldest first.
	Recent(ctx context.Context, chatKey string, n int) ([]ChatLogEntryV1, error)
	// Search returns up to limit entries whose text contains keyword
	// (case-insensitive), newest first.
	Search(ctx context.Context, chatKey, keyword string, limit int) ([]ChatLogEntryV1, error)
	// Scan calls fn with every entry of the chat, oldest first, until fn
	// returns false.
	Scan(ctx context.Context, chatKey string, fn func(ChatLogEntryV1) bool) error
	// Stats summarises one chat's log.
	Stats(ctx context.Context, chatKey string) (ChatStats, error)
	// ChatKeys lists every chat that has a log.
	ChatKeys(ctx context.Context) ([]string, error)
	// Close releases what the log holds; appends afterwards fail.
	Close() error
}

var _ Log = (*Store)(nil)

// NewPending returns a Pending for a Log other than Store: wait blocks
// until the entry is durable (a JetStream publish acknowledged) and is
// called at most once, by the first Wait; Release skips it.
func NewPending(wait func() error) *Pending { return &Pending{wait: wait} }

// Validate checks e as Append does, without recording it, and returns the
// escaped form of its chat key (see EscapeChatKey).
func Validate(e ChatLogEntryV1) (string, error) { return checkEntry(e) }
